# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The engine with DSpark and n-gram proposers (loaded by entry point, as users load them).

Greedy output with speculation is token-identical to greedy output without it (fp32,
deterministic kernels), batched and under preemption, for DSpark with fixed-length and
confidence-scheduled verification and for n-gram lookup. At temperature 1 the distribution of
the drafted tokens matches plain sampling (chi-squared); a proposer that misreports its draft
distribution is caught by the same test (negative control).
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter

import pytest
import torch
from safetensors.torch import save_file

from deepinfer_core import LLM, SamplingParams
from deepinfer_core.interfaces import Draft

from deepinfer_dspark import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

VOCAB = 128
TARGET = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": VOCAB, "hidden_size": 64,
          "intermediate_size": 96, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
          "head_dim": 16, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 512,
          "tie_word_embeddings": False, "eos_token_id": VOCAB - 1, "bos_token_id": VOCAB - 2,
          "torch_dtype": "float32"}


@pytest.fixture
def folders(tmp_path, tiny):
    tiny_config, _, random_state_dict = tiny  # the dspark tests' shared helpers (conftest.py)
    target = tmp_path / "target"
    drafter = tmp_path / "drafter"
    target.mkdir()
    drafter.mkdir()
    (target / "config.json").write_text(json.dumps(TARGET))
    config = tiny_config(vocab_size=VOCAB, num_target_layers=4, target_layer_ids=[0, 2], mask_token_id=VOCAB - 3)
    state = random_state_dict(config, seed=3)
    del state["embed_tokens.weight"], state["lm_head.weight"]  # shared with the target, as DeepSpec allows
    (drafter / "config.json").write_text(json.dumps(config))
    save_file(state, str(drafter / "model.safetensors"))
    return target, drafter


def build(target, spec=None, **kw) -> LLM:
    args = dict(load_format="dummy", dtype="float32", max_model_len=160, block_size=4, kv_cache_memory=32 << 20,
                deterministic=True, seed=11)
    args.update(kw)
    return LLM(str(target), speculative_config=spec, **args)


def prompts(count: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    # Repeated motifs give n-gram lookup something to find.
    out = []
    for _ in range(count):
        motif = [rng.randrange(VOCAB - 3) for _ in range(rng.randint(2, 5))]
        out.append((motif * 8)[: rng.randint(6, 40)])
    return out


def greedy(llm: LLM, batch: list[list[int]]) -> list[list[int]]:
    outs = llm.generate([{"prompt_token_ids": p} for p in batch],
                        SamplingParams(temperature=0, max_tokens=24, ignore_eos=True))
    assert all(o.error is None for o in outs)
    return [o.outputs[0].token_ids for o in outs]


def spec_configs(drafter) -> dict[str, dict]:
    flat = SPSProfile([1, 64, 256], [1000.0, 990.0, 700.0])  # cheap extra tokens: verify most drafts
    return {
        "dspark-fixed": {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4},
        "dspark-confidence": {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4,
                              "scheduling": "confidence", "sps_profile": flat},
        # Round time interpolated in the verified tokens (`VerifyRates`): shorter verification.
        "dspark-confidence-k1": {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4,
                                 "scheduling": "confidence", "sps_profile": flat,
                                 "sps_profile_k1": SPSProfile([2, 128, 512], [1200.0, 1190.0, 840.0])},
        "ngram": {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3},
    }


def test_greedy_speculation_equals_plain_greedy(folders) -> None:
    target, drafter = folders
    batch = prompts(6, seed=1)
    expected = greedy(build(target), batch)
    for name, spec in spec_configs(drafter).items():
        llm = build(target, spec)
        assert greedy(llm, batch) == expected, f"{name}, batched"
        assert greedy(llm, batch[:1]) == expected[:1], f"{name}, alone"
        stats = llm.engine.speculative.stats
        assert stats.verified > 0, f"{name} never verified a draft"
        if name == "ngram":
            assert stats.accepted > 0  # repeated motifs: lookups hit


def test_greedy_speculation_under_preemption(folders) -> None:
    target, drafter = folders
    batch = prompts(8, seed=2)
    expected = greedy(build(target), batch)
    per_block = build(target).engine.runner.kv_bytes_per_block()
    for name, spec in spec_configs(drafter).items():
        tight = build(target, spec, kv_cache_memory=42 * per_block, max_num_batched_tokens=64)
        assert greedy(tight, batch) == expected, name
        assert tight.engine.num_preemptions > 0, name


def test_confidence_scheduling_shortens_verification_under_a_steep_profile(folders) -> None:
    target, drafter = folders
    steep = SPSProfile([1, 2, 64], [1000.0, 500.0, 10.0])  # every extra token halves the step rate
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": steep}
    llm = build(target, spec)
    batch = prompts(4, seed=3)
    assert greedy(llm, batch) == greedy(build(target), batch)
    flat_llm = build(target, spec_configs(drafter)["dspark-confidence"])
    greedy(flat_llm, batch)
    assert llm.engine.speculative.stats.verified < flat_llm.engine.speculative.stats.verified
    # Nothing worth verifying at this load: drafting itself is skipped (probing now and then).
    assert llm.engine.speculative.proposer.skipped_rounds > 0
    assert flat_llm.engine.speculative.proposer.skipped_rounds == 0
    # The engine's commits after each verification reach the realized acceptance ratio: a random
    # drafter's drafts are rarely accepted whatever its confidences predict.
    stats, acceptance = flat_llm.engine.speculative.stats, flat_llm.engine.speculative.proposer.acceptance
    assert acceptance.rounds > 0 and stats.verified > 0
    realized = acceptance._all.realized   # decayed sum of the accepted drafts the commits reported
    assert acceptance.ratio(4) < 0.5 and (realized == 0) == (stats.accepted == 0), (acceptance.ratio(4), stats)


class MisreportingProposer:
    """Always drafts the likeliest next token but reports a uniform draft distribution: the
    verifier then accepts it with probability min(1, p / (1/V)) = 1, which is not lossless."""

    def __init__(self, best_next: dict[int, int]) -> None:
        self.best_next = best_next

    def propose(self, requests):
        uniform = torch.full((1, VOCAB), 1.0 / VOCAB)
        return [Draft([self.best_next[r.token_ids[-1]]], uniform) if r.token_ids[-1] in self.best_next
                else Draft([]) for r in requests]

    def commit(self, request_id, num_tokens):
        pass

    def remove(self, request_id):
        pass


def second_tokens(llm: LLM, prompt: list[int], n: int) -> Counter:
    """Counts of the first two sampled tokens; the second is the drafted position (max_tokens 3
    leaves room for one draft after the first token, then the bonus)."""
    params = [SamplingParams(temperature=1.0, top_k=6, max_tokens=3, ignore_eos=True, seed=s) for s in range(n)]
    outs = llm.generate([{"prompt_token_ids": prompt}] * n, params)
    return Counter(tuple(o.outputs[0].token_ids[:2]) for o in outs)


def chi2_pvalue(a: Counter, b: Counter) -> float:
    """Two-sample chi-squared test of homogeneity (bins with fewer than 10 pooled counts merged);
    p-value from the chi-squared survival function, Q(df / 2, stat / 2) (regularised gamma)."""
    keys = sorted(set(a) | set(b), key=lambda k: -(a[k] + b[k]))
    rows, rest = [], [0, 0]
    for k in keys:
        if a[k] + b[k] >= 10:
            rows.append([a[k], b[k]])
        else:
            rest[0] += a[k]
            rest[1] += b[k]
    if sum(rest) > 0:
        rows.append(rest)
    counts = torch.tensor(rows, dtype=torch.float64)
    expected = counts.sum(1, keepdim=True) * counts.sum(0, keepdim=True) / counts.sum()
    stat = ((counts - expected) ** 2 / expected).sum()
    df = torch.tensor(float(len(rows) - 1), dtype=torch.float64)
    return float(torch.special.gammaincc(df / 2, stat / 2))


def test_sampled_distribution_matches_plain_sampling(folders) -> None:
    target, drafter = folders
    prompt = prompts(1, seed=4)[0]
    n = 3000
    plain = second_tokens(build(target, max_num_seqs=256), prompt, n)
    spec = build(target, spec_configs(drafter)["dspark-fixed"], max_num_seqs=256)
    drafted = second_tokens(spec, prompt, n)
    assert spec.engine.speculative.stats.verified > 0
    assert chi2_pvalue(plain, drafted) > 1e-3
    best_next = {}
    for (first, second), _ in sorted(plain.items(), key=lambda kv: kv[1]):
        best_next[first] = second  # ascending counts: the most common second token wins
    liar = second_tokens(build(target, {"proposer": MisreportingProposer(best_next), "num_speculative_tokens": 1},
                               max_num_seqs=256), prompt, n)
    assert chi2_pvalue(plain, liar) < 1e-6, "the negative control passed: the test cannot see a biased verifier"
    assert math.isfinite(chi2_pvalue(plain, drafted))


def test_decode_profile_pauses_drafting_with_backoff_and_stays_lossless(folders, monkeypatch) -> None:
    """Speculative steps measured 100x slower than plain decode steps: after the first drafted
    round the proposer pauses drafting, doubling the pause each time drafting loses again; the
    context features observed while paused are projected on resume, equal to eager projection.
    (The pause a loss's size sets, `DraftCosts.probe_pause`, is switched off here: test_pause_ledger.py.)"""
    import deepinfer_dspark.draft_costs as draft_costs

    monkeypatch.setattr(draft_costs, "PROBE_SHARE", math.inf)
    target, drafter = folders
    # A round of 4 drafts all accepted would beat plain decoding (5 x 300 > 1000 tokens/s at
    # batch 1), so drafting is not ruled out up front; the random drafter's expected gain loses.
    slow_spec = SPSProfile([1, 64], [300.0, 290.0])
    fast_plain = SPSProfile([1, 64], [1000.0, 990.0])
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": slow_spec, "decode_profile": fast_plain, "probe_every": 2, "max_probe_every": 8}
    batch = prompts(3, seed=5)
    expected = greedy(build(target), batch)
    llm = build(target, spec)
    proposer = llm.engine.speculative.proposer
    rounds = []
    original = proposer.runner.draft

    def draft(requests, num_tokens):
        rounds.append(proposer.skipped_rounds)
        return original(requests, num_tokens)

    proposer.runner.draft = draft
    assert greedy(llm, batch) == expected
    gaps = [b - a for a, b in zip(rounds, rounds[1:])]
    assert gaps[:3] == [2, 4, 8] and all(g == 8 for g in gaps[3:]), gaps   # backoff, capped
    # Paused rounds overlap like plain decoding (asynchronous scheduling; each pause's first step
    # follows a synchronous drafted round, so it has nothing in flight to overlap with).
    assert llm.engine.num_overlapped_steps >= proposer.skipped_rounds - len(rounds) > 0
    assert greedy(build(target, spec, async_scheduling=False), batch) == expected
    # Lazy context == eager context: the same request generated with the gate off.
    # And with `defer_context` off: projected every step while paused, nothing buffered.
    direct_spec = {**spec, "defer_context": False}
    assert greedy(build(target, direct_spec), batch) == expected
    eager = build(target, {**spec, "decode_profile": SPSProfile([1, 64], [1.0, 1.0])})
    lazy, direct = build(target, spec), build(target, direct_spec)
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


def test_no_drafting_when_even_full_acceptance_cannot_pay(folders) -> None:
    """Spec rounds 100x slower than plain steps at small batches: no round can win there, so the
    drafter never runs (no probes) and every step overlaps like plain decoding; a profile where
    full acceptance would pay still drafts. (The plain profile collapses at 64 requests, so
    drafting could pay there and the proposer is not retired.)"""
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 64], [10.0, 9.0]),
            "decode_profile": SPSProfile([1, 8, 64], [1000.0, 990.0, 1.0])}
    batch = prompts(3, seed=6)
    expected = greedy(build(target), batch)
    llm = build(target, spec)
    proposer = llm.engine.speculative.proposer
    assert not proposer.retired and not proposer.cannot_pay(64)
    assert proposer.cannot_pay(1) and proposer.cannot_pay(3)
    proposer.runner.draft = lambda requests, num_tokens: pytest.fail("drafted although no round can pay")
    assert greedy(llm, batch) == expected
    assert proposer.skipped_rounds > 0 and llm.engine.speculative.stats.proposed == 0
    # 24 tokens each; only the first step after admission has nothing in flight (the proposer
    # re-commits its pause without waiting for token ids).
    steps = llm.engine.num_overlapped_steps
    assert steps >= 21, steps
    paying = build(target, {**spec, "sps_profile": SPSProfile([1, 64], [600.0, 590.0])})
    assert not paying.engine.speculative.proposer.cannot_pay(3)   # 3 x 5 x 600 > 3 x 1000


def test_measured_round_times_stop_drafting_that_the_profiles_favour(folders) -> None:
    """The profiles say drafted rounds cost no more than plain steps, but on this (fake) clock a
    round takes 10x its predicted time and a plain step 1x: once measured, drafting cannot pay
    even with every draft accepted (5 tokens a round < 10 plain steps), so the proposer stops
    probing. Output stays that of plain decoding, also on the real clock; without the key the
    step times are not measured."""
    from deepinfer_dspark.measured_rates import SPEC

    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 64], [1000.0, 990.0]), "decode_profile": SPSProfile([1, 64], [1000.0, 990.0]),
            "probe_every": 2, "measure_step_times": True}   # opt-in
    batch = prompts(3, seed=8)
    expected = greedy(build(target), batch)
    llm = build(target, spec)
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
    proposer.runner.draft = lambda requests, k: rounds.append(len(requests)) or original(requests, k)
    assert not proposer.cannot_pay(3)                    # by the profiles alone, drafting can pay
    assert greedy(llm, batch) == expected
    assert proposer.cannot_pay(3) and rates.ratio(3) == pytest.approx(10.0)
    assert 3 <= len(rounds) <= 8, rounds                 # probes until the rounds were measured
    again = len(rounds)
    assert greedy(llm, batch) == expected
    assert len(rounds) == again                          # the second batch: no probe at all
    assert greedy(build(target, spec), batch) == expected    # the real clock: whatever it decides
    unmeasured = build(target, {key: value for key, value in spec.items() if key != "measure_step_times"})
    assert greedy(unmeasured, batch) == expected and not unmeasured.engine.speculative.proposer.rates.samples


def test_a_proposer_that_can_never_pay_retires_and_the_engine_runs_plain(folders) -> None:
    """Full acceptance loses to plain decoding at every batch size the decode profile covers: the
    proposer retires at load, and the engine is the plain one (no speculative decoder, no
    features, plain decode graphs) with the same greedy output; the vectorised decision agrees
    with `cannot_pay` batch by batch."""
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 64], [10.0, 9.0]), "decode_profile": SPSProfile([1, 64], [1000.0, 990.0])}
    batch = prompts(3, seed=7)
    expected = greedy(build(target), batch)
    llm = build(target, spec)
    assert llm.engine.speculative is None and llm.engine.runner.aux_layers == ()
    assert greedy(llm, batch) == expected
    runner = build(target, {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4}
                   ).engine.speculative.proposer.runner
    for plain_rates in ([1000.0, 990.0], [1000.0, 1.0]):     # retired; pays at large batches
        proposer = DSparkProposer(runner, 4, spec["sps_profile"], decode=SPSProfile([1, 64], plain_rates))
        assert proposer.retired == all(proposer.cannot_pay(b) for b in range(1, 65))
        assert proposer.retired == (plain_rates[1] > 1.0)
        assert proposer.retired_reason.startswith("dspark:") == proposer.retired


def test_pause_policy_for_unverified_rounds_and_lighter_loads(folders, monkeypatch) -> None:
    """With a decode profile: a round whose scheduler verifies nothing is a loss (the pause
    doubles each time), at its batch bucket only (a smaller batch drafts, and the pause is still
    there when the batch comes back); the drafted round is timed as a round even though nothing
    was verified. (`DraftCosts.probe_pause` switched off, as above.)"""
    from deepinfer_core.interfaces import DraftRequest as CoreRequest

    import deepinfer_dspark.draft_costs as draft_costs

    monkeypatch.setattr(draft_costs, "PROBE_SHARE", math.inf)

    from deepinfer_dspark.draft_runner import DraftOutput
    from deepinfer_dspark.measured_rates import SPEC

    target, drafter = folders
    runner = build(target, {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4}
                   ).engine.speculative.proposer.runner
    # Under these profiles a confident draft is worth verifying; a zero-confidence one never is.
    flat = SPSProfile([1, 512], [1000.0, 500.0])
    proposer = DSparkProposer(runner, 4, flat, decode=SPSProfile([1, 512], [1000.0, 999.0]), probe_every=2,
                              max_probe_every=16, measure_step_times=True)
    now = [0.0]
    proposer.rates.clock = lambda: now[0]
    confidence = [0.0]
    runner.num_positions = lambda request_id: 9
    runner.draft = lambda requests, k: [DraftOutput(torch.tensor([1, 2, 3, 4]), None,
                                                    torch.full((4,), confidence[0]), torch.zeros(4))
                                        for _ in requests]

    def requests(count: int) -> list:
        return [CoreRequest(f"r{i}", list(range(10)), 4, 0.0, 0, 1.0, 0.0, 0, 10) for i in range(count)]

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


def test_a_slow_spell_does_not_rule_drafting_out_for_good(folders) -> None:
    """Drafted rounds run 30x their profile for a while, long enough that the measured ratio rules
    drafting out; every `max_probe_every` rounds without drafting the proposer drafts a run of
    `RUN` rounds again, and once rounds are back on profile the estimate follows within a couple
    of runs and drafting resumes (with a run of plain steps every `max_probe_every` rounds)."""
    from deepinfer_core.interfaces import DraftRequest as CoreRequest

    from deepinfer_dspark.draft_runner import DraftOutput
    from deepinfer_dspark.measured_rates import RUN, SPEC

    target, drafter = folders
    runner = build(target, {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4}
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
    runner.draft = lambda requests, k: [DraftOutput(torch.tensor([1, 2, 3, 4]), None, torch.full((4,), 0.99),
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


def test_decode_profile_needs_confidence_scheduling(folders) -> None:
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4,
            "decode_profile": SPSProfile([1], [1.0])}
    with pytest.raises(ValueError, match="speculative_config.decode_profile"):
        build(target, spec)
    fixed = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "sps_profile": SPSProfile([1], [1.0])}
    with pytest.raises(ValueError, match="^speculative_config.sps_profile: only used with scheduling='confidence'"):
        build(target, fixed)
    short = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4,
             "sps_profile_k1": SPSProfile([2], [1.0])}
    with pytest.raises(ValueError, match="^speculative_config.sps_profile_k1: only used with scheduling='confidence'"):
        build(target, short)
    timed = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
             "sps_profile": SPSProfile([1], [1.0]), "measure_step_times": True}
    with pytest.raises(ValueError, match="^speculative_config.measure_step_times: .* needs decode_profile"):
        build(target, timed)


def test_profiles_as_dicts_and_bad_profile_values(folders) -> None:
    """A profile may come as its dict form; anything else that is not a path is refused by key."""
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 64], [600.0, 590.0]).to_dict(),
            "decode_profile": SPSProfile([1, 64], [1000.0, 990.0]).to_dict()}
    proposer = build(target, spec).engine.speculative.proposer
    assert proposer.sps.batch_tokens == [1, 64] and proposer.decode.steps_per_s == [1000.0, 990.0]
    with pytest.raises(ValueError, match="^speculative_config.sps_profile: expected an SPSProfile"):
        build(target, {**spec, "sps_profile": 3})
    with pytest.raises(ValueError, match="^speculative_config.sps_profile_k1: expected an SPSProfile"):
        build(target, {**spec, "sps_profile_k1": [2.0]})
    with pytest.raises(ValueError, match="^speculative_config.sps_profile_k1: cannot load"):
        build(target, {**spec, "sps_profile_k1": "/nonexistent/spec_k1_sps.json"})
    k1 = build(target, {**spec, "sps_profile_k1": SPSProfile([2, 128], [900.0, 880.0]).to_dict()})
    assert k1.engine.speculative.proposer.verify_rates.short.steps_per_s == [900.0, 880.0]
    with pytest.raises(ValueError, match="^speculative_config.defer_context: must be a bool, got 'no'"):
        build(target, {**spec, "defer_context": "no"})
    with pytest.raises(ValueError, match="^speculative_config.decode_profile: cannot load"):
        build(target, {**spec, "decode_profile": {"format": "deepinfer-sps-profile", "version": 1,
                                                  "batch_tokens": [True, 2], "steps_per_s": [1.0, 1.0]}})


def test_unknown_keys_are_refused_by_name(folders) -> None:
    """A misspelt knob must not be ignored silently, for either proposer."""
    target, drafter = folders
    with pytest.raises(ValueError, match="^speculative_config.prompt_lookup_maximum: unknown key for method 'ngram'"):
        build(target, {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_maximum": 2})
    with pytest.raises(ValueError, match="^speculative_config.probe_evry: unknown key for method 'dspark'"):
        build(target, {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 2, "probe_evry": 4})
    assert build(target, {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 2}).engine.speculative


def test_paths_of_the_wrong_type_are_refused_by_name(folders) -> None:
    """`model` and `calibration` take paths: another type names the key and what it takes."""
    target, drafter = folders
    with pytest.raises(ValueError, match=r"^speculative_config.model: a DeepSpec DSpark checkpoint folder is required, got 5"):
        build(target, {"method": "dspark", "num_speculative_tokens": 2, "model": 5})
    with pytest.raises(ValueError, match=r"^speculative_config.calibration: must be a path \(str or Path\), got 5"):
        build(target, {"method": "dspark", "num_speculative_tokens": 2, "model": str(drafter), "calibration": 5})


def test_the_draft_context_pool_is_reserved_for_the_engines_batch(folders) -> None:
    """The factory reserves the context pool for max_num_seqs requests of max_model_len
    positions, no more than the KV cache holds (`reserve_blocks`), and a full batch of requests
    as long as max_model_len never grows it (a growth drops the captured draft graphs); the old
    first size, 64 blocks, would have grown twice here."""
    from deepinfer_dspark.context_pool import reserve_blocks

    target, drafter = folders
    spec = spec_configs(drafter)["dspark-fixed"]
    seqs, length = 8, 320
    llm = build(target, spec, max_num_seqs=seqs, max_model_len=length)
    runner = llm.engine.speculative.proposer.runner
    pool, cfg = runner.context, runner.drafter.config
    kv_tokens = llm.config.kv_cache_memory // llm.engine.runner.kv_bytes_per_block() * llm.config.block_size
    position = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_dim * 4   # float32
    assert kv_tokens >= seqs * length   # the batch's bound holds here
    assert pool.num_blocks == reserve_blocks(seqs, length, pool.block_size, position, kv_tokens) \
        == seqs * -(-length // pool.block_size) == 80
    generation, rng = pool.generation, random.Random(3)
    batch = [[rng.randrange(VOCAB - 3) for _ in range(length - 30)] for _ in range(seqs)]
    outs = llm.generate([{"prompt_token_ids": p} for p in batch],
                        SamplingParams(temperature=0, max_tokens=28, ignore_eos=True))
    assert all(o.error is None and len(o.outputs[0].token_ids) == 28 for o in outs)
    assert pool.generation == generation and sum(len(pool.block_table(r)) for r in pool.request_ids) == 0
    small = build(target, spec, max_num_seqs=1, max_model_len=64).engine.speculative.proposer.runner.context
    assert small.num_blocks == 2   # exactly what one request of 64 positions needs
    with pytest.raises(ValueError, match="^kv_cache_memory"):   # no KV block: the core names its own field
        build(target, spec, kv_cache_memory=4095)
