# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The engine with DSpark's confidence scheduling and a decode profile: drafting pauses where it
loses (backoff), is skipped where even full acceptance cannot pay, retires where it never can,
and measured step times can overrule the profiles; greedy output stays that of plain decoding
throughout. (The tiny target and drafter: `folders` and `kit` in conftest.py.)
"""

from __future__ import annotations

import math

import pytest
import torch
from deepinfer_core import SamplingParams

from deepinfer_dspark import DSparkProposer
from deepinfer_dspark.sps import SPSProfile


def test_decode_profile_pauses_drafting_with_backoff_and_stays_lossless(folders, monkeypatch, kit) -> None:
    """Speculative steps measured 100x slower than plain decode steps: after the first drafted
    round the proposer pauses drafting, doubling the pause each time drafting loses again; the
    context features observed while paused are projected on resume, equal to eager projection.
    (The pause a loss's size sets, `DraftCosts.probe_pause`, is switched off here: test_pause_ledger.py. The
    patched `PROBE_SHARE` reaches the proposer as its costs' default `probe_share` when the engine is built
    after it, so the keep cost's decline, `FeatureKeeping._dear_to_keep`, is off too.)"""
    import deepinfer_dspark.draft_costs as draft_costs

    monkeypatch.setattr(draft_costs, "PROBE_SHARE", math.inf)
    target, drafter = folders
    # A round of 4 drafts all accepted would beat plain decoding (5 x 300 > 1000 tokens/s at
    # batch 1), so drafting is not ruled out up front; the random drafter's expected gain loses.
    slow_spec = SPSProfile([1, 64], [300.0, 290.0])
    fast_plain = SPSProfile([1, 64], [1000.0, 990.0])
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": slow_spec, "decode_profile": fast_plain, "probe_every": 2, "max_probe_every": 8}
    batch = kit.prompts(3, seed=5)
    expected = kit.greedy(kit.build(target), batch)
    llm = kit.build(target, spec)
    proposer = llm.engine.speculative.proposer
    rounds = []
    original = proposer.runner.draft

    def draft(requests, num_tokens, **kw):   # (`while_running`: the proposer's bookkeeping hook)
        rounds.append(proposer.skipped_rounds)
        return original(requests, num_tokens, **kw)

    proposer.runner.draft = draft
    assert kit.greedy(llm, batch) == expected
    gaps = [b - a for a, b in zip(rounds, rounds[1:])]
    assert gaps[:3] == [2, 4, 8] and all(g == 8 for g in gaps[3:]), gaps   # backoff, capped
    # Paused rounds overlap like plain decoding (asynchronous scheduling; each pause's first step
    # follows a synchronous drafted round, so it has nothing in flight to overlap with).
    assert llm.engine.num_overlapped_steps >= proposer.skipped_rounds - len(rounds) > 0
    assert kit.greedy(kit.build(target, spec, async_scheduling=False), batch) == expected
    # Lazy context == eager context: the same request generated with the gate off.
    # And with `defer_context` off: projected every step while paused, nothing buffered.
    direct_spec = {**spec, "defer_context": False}
    assert kit.greedy(kit.build(target, direct_spec), batch) == expected
    eager = kit.build(target, {**spec, "decode_profile": SPSProfile([1, 64], [1.0, 1.0])})
    lazy, direct = kit.build(target, spec), kit.build(target, direct_spec)
    p = [{"prompt_token_ids": batch[0]}]
    params = SamplingParams(temperature=0, max_tokens=24, ignore_eos=True)
    for engine in (eager, lazy, direct):
        engine.engine.speculative.proposer.remove = lambda request_id: None   # keep the contexts to compare
        engine.generate(p, params)
    assert not direct.engine.speculative.proposer.pending.holds and direct.engine.speculative.proposer.skipped_rounds
    with torch.inference_mode():   # as inside the engine's step
        lazy.engine.speculative.proposer._flush()
    runner_e = eager.engine.speculative.proposer.runner
    (rid_e,) = runner_e.context.request_ids
    keys_e, values_e = runner_e.context_of(rid_e)
    assert keys_e.shape[1] > len(batch[0])
    for other in (lazy, direct):
        runner = other.engine.speculative.proposer.runner
        (rid,) = runner.context.request_ids
        keys, values = runner.context_of(rid)
        torch.testing.assert_close(keys, keys_e, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(values, values_e, rtol=1e-5, atol=1e-5)


def test_no_drafting_when_even_full_acceptance_cannot_pay(folders, kit) -> None:
    """Spec rounds 100x slower than plain steps at small batches: no round can win there, so the
    drafter never runs (no probes) and every step overlaps like plain decoding; a profile where
    full acceptance would pay still drafts. (The plain profile collapses at 64 requests, so
    drafting could pay there and the proposer is not retired.)"""
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 64], [10.0, 9.0]),
            "decode_profile": SPSProfile([1, 8, 64], [1000.0, 990.0, 1.0])}
    batch = kit.prompts(3, seed=6)
    expected = kit.greedy(kit.build(target), batch)
    llm = kit.build(target, spec)
    proposer = llm.engine.speculative.proposer
    assert not proposer.retired and not proposer.cannot_pay(64)
    assert proposer.cannot_pay(1) and proposer.cannot_pay(3)
    proposer.runner.draft = lambda requests, num_tokens, **kw: pytest.fail("drafted although no round can pay")
    assert kit.greedy(llm, batch) == expected
    assert proposer.skipped_rounds > 0 and llm.engine.speculative.stats.proposed == 0
    # 24 tokens each; only the first step after admission has nothing in flight (the proposer
    # re-commits its pause without waiting for token ids).
    steps = llm.engine.num_overlapped_steps
    assert steps >= 21, steps
    paying = kit.build(target, {**spec, "sps_profile": SPSProfile([1, 64], [600.0, 590.0])})
    assert not paying.engine.speculative.proposer.cannot_pay(3)   # 3 x 5 x 600 > 3 x 1000


def test_measured_round_times_stop_drafting_that_the_profiles_favour(folders, kit) -> None:
    """The profiles say drafted rounds cost no more than plain steps, but on this (fake) clock a
    round takes 10x its predicted time and a plain step 1x: once measured, drafting cannot pay
    even with every draft accepted (5 tokens a round < 10 plain steps), so the proposer stops
    probing. Output stays that of plain decoding, also on the real clock; with neither timing
    key on the step times are not measured."""
    from deepinfer_dspark.measured_rates import SPEC

    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 64], [1000.0, 990.0]), "decode_profile": SPSProfile([1, 64], [1000.0, 990.0]),
            "probe_every": 2, "measure_step_times": True}   # opt-in
    batch = kit.prompts(3, seed=8)
    expected = kit.greedy(kit.build(target), batch)
    llm = kit.build(target, spec)
    proposer = llm.engine.speculative.proposer
    rates, now = proposer.rates, [0.0]

    def clock() -> float:   # the step that is open now took its predicted time, x10 for a round
        if rates._open is not None:
            began, kind, _, predicted, _ = rates._open
            now[0] = began + predicted * (10.0 if kind == SPEC else 1.0)
        return now[0]

    rates.clock = clock
    rounds = []
    original = proposer.runner.draft
    proposer.runner.draft = lambda requests, k, **kw: rounds.append(len(requests)) or original(requests, k, **kw)
    assert not proposer.cannot_pay(3)                    # by the profiles alone, drafting can pay
    assert kit.greedy(llm, batch) == expected
    assert proposer.cannot_pay(3) and rates.ratio(3) == pytest.approx(10.0)
    assert 3 <= len(rounds) <= 8, rounds                 # probes until the rounds were measured
    again = len(rounds)
    assert kit.greedy(llm, batch) == expected
    assert len(rounds) == again                          # the second batch: no probe at all
    assert kit.greedy(kit.build(target, spec), batch) == expected    # the real clock: whatever it decides
    unmeasured = kit.build(target, {**{key: value for key, value in spec.items() if key != "measure_step_times"},
                                    "measure_round_times": False})   # (the default since session 36: timed)
    assert kit.greedy(unmeasured, batch) == expected and not unmeasured.engine.speculative.proposer.rates.samples


def test_a_proposer_that_can_never_pay_retires_and_the_engine_runs_plain(folders, kit) -> None:
    """Full acceptance loses to plain decoding at every batch size the decode profile covers: the
    proposer retires at load, and the engine is the plain one (no speculative decoder, no
    features, plain decode graphs) with the same greedy output; the vectorised decision agrees
    with `cannot_pay` batch by batch."""
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 64], [10.0, 9.0]), "decode_profile": SPSProfile([1, 64], [1000.0, 990.0])}
    batch = kit.prompts(3, seed=7)
    expected = kit.greedy(kit.build(target), batch)
    llm = kit.build(target, spec)
    assert llm.engine.speculative is None and llm.engine.runner.aux_layers == ()
    assert kit.greedy(llm, batch) == expected
    runner = kit.build(target, {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4}
                   ).engine.speculative.proposer.runner
    for plain_rates in ([1000.0, 990.0], [1000.0, 1.0]):     # retired; pays at large batches
        proposer = DSparkProposer(runner, 4, spec["sps_profile"], decode=SPSProfile([1, 64], plain_rates))
        assert proposer.retired == all(proposer.cannot_pay(b) for b in range(1, 65))
        assert proposer.retired == (plain_rates[1] > 1.0)
        assert proposer.retired_reason.startswith("dspark:") == proposer.retired


def test_pause_policy_for_unverified_rounds_and_lighter_loads(folders, monkeypatch, kit) -> None:
    """With a decode profile: a round whose scheduler verifies nothing is a loss (the pause
    doubles each time), at its batch bucket only (a smaller batch drafts, and the pause is still
    there when the batch comes back); the drafted round is timed as a round even though nothing
    was verified. (`DraftCosts.probe_pause` and `_dear_to_keep` switched off, as above.)"""
    from deepinfer_core.interfaces import DraftRequest as CoreRequest

    import deepinfer_dspark.draft_costs as draft_costs

    monkeypatch.setattr(draft_costs, "PROBE_SHARE", math.inf)

    from deepinfer_dspark.draft_runner import DraftOutput
    from deepinfer_dspark.measured_rates import SPEC

    target, drafter = folders
    runner = kit.build(target, {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4}
                   ).engine.speculative.proposer.runner
    # Under these profiles a confident draft is worth verifying; a zero-confidence one never is.
    flat = SPSProfile([1, 512], [1000.0, 500.0])
    proposer = DSparkProposer(runner, 4, flat, decode=SPSProfile([1, 512], [1000.0, 999.0]), probe_every=2,
                              max_probe_every=16, measure_step_times=True)
    now = [0.0]
    proposer.rates.clock = lambda: now[0]
    confidence = [0.0]
    runner.num_positions = lambda request_id: 9
    runner.draft = lambda requests, k, **kw: [DraftOutput(torch.tensor([1, 2, 3, 4]), None,
                                                    torch.full((4,), confidence[0]), torch.zeros(4))
                                        for _ in requests]

    def requests(count: int) -> list:
        return [CoreRequest(f"r{i}", list(range(10)), 4, 0.0, 0, 1.0, 0.0, 0, 40) for i in range(count)]   # bodies

    def step(count: int) -> int:
        drafted = sum(len(d.token_ids) for d in proposer.propose(requests(count)))
        now[0] += 0.001
        proposer.rates.observed(True)    # the engine shows the proposer each step's committed rows
        return drafted

    assert step(64) == 0 and proposer.idle_rounds() == 2           # nothing verified: a loss
    assert proposer.rates._open[1] == SPEC                        # the round is timed as a drafted one
    step(64)
    step(64)
    assert step(64) == 0 and proposer.idle_rounds() == 4           # lost again: the pause doubles
    step(64)
    assert proposer.idle_rounds() == 3
    confidence[0] = 0.99
    assert step(2) > 0                                            # a lighter bucket: not paused
    assert proposer.idle_rounds() == 0
    assert proposer.pauses.left(64) == 3                          # the pause at 64 is kept


def test_a_slow_spell_does_not_rule_drafting_out_for_good(folders, kit) -> None:
    """Drafted rounds run 30x their profile for a while, long enough that the measured ratio rules
    drafting out; every `max_probe_every` rounds without drafting the proposer drafts a run of
    `RUN` rounds again, and once rounds are back on profile the estimate follows within a couple
    of runs and drafting resumes (with a run of plain steps every `max_probe_every` rounds)."""
    from deepinfer_core.interfaces import DraftRequest as CoreRequest

    from deepinfer_dspark.draft_runner import DraftOutput
    from deepinfer_dspark.measured_rates import RUN, SPEC

    target, drafter = folders
    runner = kit.build(target, {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4}
                   ).engine.speculative.proposer.runner
    profile = SPSProfile([1, 512], [1000.0, 999.0])
    proposer = DSparkProposer(runner, 4, profile, decode=profile, probe_every=2, max_probe_every=32,
                              measure_step_times=True)
    rates, now, slow = proposer.rates, [0.0], [30.0]

    def clock() -> float:   # the open step took its predicted time; a drafted round `slow` times that
        if rates._open is not None:
            began, kind, _, predicted, _ = rates._open
            now[0] = began + predicted * (slow[0] if kind == SPEC else 1.0)
        return now[0]

    rates.clock = clock
    runner.num_positions = lambda request_id: 9
    runner.draft = lambda requests, k, **kw: [DraftOutput(torch.tensor([1, 2, 3, 4]), None, torch.full((4,), 0.99),
                                                    torch.zeros(4)) for _ in requests]
    request = [CoreRequest("r", list(range(10)), 4, 0.0, 0, 1.0, 0.0, 0, 10)]
    drafted = []
    for round_ in range(400):
        if round_ == 100:
            slow[0] = 1.0                                  # the slow spell ends
        drafted.append(sum(len(d.token_ids) for d in proposer.propose(request)) > 0)
        rates.observed(True)
    assert sum(drafted[60:100]) <= 2 * RUN                         # ruled out: re-timing runs only
    assert proposer.cannot_pay(1) is False and rates.ratio(1) < 1.5
    assert sum(drafted[-64:]) >= 64 - 2 * RUN                      # drafting resumed for good
