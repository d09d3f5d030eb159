# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/engine_probes.StepTimes` with a log: each step's emitted tokens and accepted and
verified drafts add up to the requests' own counts (`RequestMetrics`), and `reply` says where in
the replies each step ran (session 24: where confidence scheduling's drafted rounds sat)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from deepinfer_core import SamplingParams


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_step_log_counts_match_the_requests(benchmark_script, monkeypatch, folders, kit, async_scheduling) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    probes = benchmark_script("engine_probes")
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 3}
    llm = kit.build(target, spec, async_scheduling=async_scheduling)
    log: list[dict] = []
    probes.StepTimes(llm, log)
    outs = llm.generate([{"prompt_token_ids": p} for p in kit.prompts(3, seed=2)],
                        SamplingParams(temperature=0, max_tokens=20, ignore_eos=True))
    tokens = sum(len(o.outputs[0].token_ids) for o in outs)
    assert tokens == 60 and sum(row["emitted"] for row in log) == tokens
    assert sum(row["accepted"] for row in log) == sum(o.metrics.spec_accepted for o in outs)
    verified = sum(o.metrics.spec_verified for o in outs)
    assert verified > 0 and sum(row["verified"] for row in log) == verified
    replies = [row["reply"] for row in log]
    assert replies[0] == 0 and max(replies) >= 15   # the shortest running reply, before each step
    assert all(row["accepted"] <= row["verified"] for row in log)


@pytest.mark.parametrize("ledger", [False, True])
def test_the_ledgers_are_opt_in_and_the_harness_is_timed(benchmark_script, monkeypatch, folders, kit,
                                                          ledger) -> None:
    """Without `ledger` a step's row reads nothing of the proposer's ledgers (session 49: reading
    them cost DSpark engines ~20 us a step that plain decoding's never paid, 1-2% of a call at 8
    requests on the H200); with it every row after a running step holds them. The wrapper's own
    work is summed apart (`harness`, `take_harness`: then zero)."""
    from deepinfer_dspark.sps import SPSProfile

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    probes = benchmark_script("engine_probes")
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 3, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 64], [900.0, 500.0]), "decode_profile": SPSProfile([1, 64], [1000.0, 990.0])}
    llm = kit.build(target, spec)
    log: list[dict] = []
    trace = probes.StepTimes(llm, log, ledger=ledger)
    reads = []
    original = probes.StepTimes._ledger
    monkeypatch.setattr(probes.StepTimes, "_ledger", lambda self, batch: reads.append(batch) or original(self, batch))
    llm.generate([{"prompt_token_ids": p} for p in kit.prompts(2, seed=4)],
                 SamplingParams(temperature=0, max_tokens=12, ignore_eos=True))
    running = [row for row in log if row["running"]]
    assert running and all(("pause" in row) is ledger for row in running)
    assert len(reads) == (len(log) if ledger else 0)
    seconds = trace.take_harness()
    assert 0 < seconds < 5 and trace.take_harness() == 0.0
    trace.active, steps = False, len(log)   # switched off: the engine's own steps, nothing logged or timed
    trace.proposer.judged = ("stale",)      # a judgement of an unlogged call: never logged later
    timed = sum(map(len, trace.times.values()))
    llm.generate([{"prompt_token_ids": p} for p in kit.prompts(2, seed=5)],
                 SamplingParams(temperature=0, max_tokens=6, ignore_eos=True))
    assert len(log) == steps and trace.take_harness() == 0.0 and sum(map(len, trace.times.values())) == timed
    assert (trace.proposer.judged is None) is ledger   # (cleared as `_ledger` would, only when it reads them)
    trace.active = True
    llm.generate([{"prompt_token_ids": p} for p in kit.prompts(1, seed=6)],
                 SamplingParams(temperature=0, max_tokens=6, ignore_eos=True))
    assert len(log) > steps and trace.take_harness() > 0


def test_the_log_says_which_steps_captured_features_and_which_ran_in_a_stretch(benchmark_script, monkeypatch,
                                                                              folders, kit) -> None:
    """`features` counts a step's forwards that captured the drafter's features and `stretch` marks
    the steps of a dormant ("d") or quiet ("q") stretch (session 51): a fixed-k engine captures in
    every step and is never dormant; one where drafting cannot pay at 2 requests (profiles: a
    round of 8 tokens at 1/10 of plain decoding's rate; it could at 1) runs most steps dormant,
    capturing nothing (a few are prompt-lookup rounds); a plain engine's rows carry neither field."""
    from deepinfer_dspark.sps import SPSProfile

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    probes = benchmark_script("engine_probes")
    target, drafter = folders
    fixed = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 3}
    hopeless = {**fixed, "scheduling": "confidence",
                "sps_profile": SPSProfile([1, 4, 8, 64], [1000.0, 1000.0, 100.0, 100.0]),
                "decode_profile": SPSProfile([1, 64], [1000.0, 1000.0])}
    rows = {}
    for name, spec in (("fixed", fixed), ("hopeless", hopeless), ("plain", None)):
        llm = kit.build(target, spec)
        log: list[dict] = []
        probes.StepTimes(llm, log)
        llm.generate([{"prompt_token_ids": p} for p in kit.prompts(2, seed=7)],
                     SamplingParams(temperature=0, max_tokens=24, ignore_eos=True))
        rows[name] = log
    assert all(row["features"] == 1 and row["stretch"] == "" for row in rows["fixed"] if row["running"])
    dormant = [row for row in rows["hopeless"] if row["stretch"] == "d"]
    assert len(dormant) >= len(rows["hopeless"]) // 2 and all(row["features"] == 0 for row in dormant)
    assert all("features" not in row and "stretch" not in row for row in rows["plain"])


def test_the_log_carries_the_pause_ledgers(benchmark_script, monkeypatch, fake_runner) -> None:
    """Each step's row holds the confidence proposer's ledgers at the bucket of the requests it
    ran (`StepTimes._ledger`): rounds still paused in bodies and openings, and the smoothed gains
    (None before a round); nothing for other proposers or an empty batch (session 42: why a load
    drafted or not, read from the H200's logs); after a round the pause policy priced, its inputs
    (`judged`, session 43: why the openings' ledger read 0.93-0.98 at 1 request)."""
    import types

    from deepinfer_dspark.proposers import DSparkProposer
    from deepinfer_dspark.sps import SPSProfile

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    probes = benchmark_script("engine_probes")
    proposer = DSparkProposer(fake_runner(4, 0.9), 4, SPSProfile([5, 40], [500.0, 200.0]),
                              decode=SPSProfile([1, 8], [1000.0, 1000.0]))
    proposer.pauses.pause(6, 30)                        # 5 and 6 requests: one bucket
    proposer.pauses.judge(5, 0.8)
    proposer.openings.ledger.pause(2, 7)
    proposer.openings.ledger.judge(2, 1.3)
    from deepinfer_dspark.measured_rates import SPEC
    for _ in range(3):                                  # three samples of rounds 1.5x their prediction at 2
        proposer.rates.windows.setdefault((SPEC, 2), []).append(1.5)
    proposer.rates._medians[(SPEC, 2)] = 1.5
    log = types.SimpleNamespace(proposer=proposer)
    # `bound` before any evidence: every draft accepted, 5 tokens a request at a full round's rate
    bound = {b: 5 * b * proposer.costs.round_rate(b) / (b * 1000.0) for b in (2, 5)}
    assert probes.StepTimes._ledger(log, 5) == {"pause": 30, "opening_pause": 0, "gain": 0.8, "opening_gain": None,
                                                "round_time": 1.0, "bound": round(bound[5], 3)}
    assert probes.StepTimes._ledger(log, 2) == {"pause": 0, "opening_pause": 7, "gain": None, "opening_gain": 1.3,
                                                "round_time": 1.5, "bound": round(bound[2], 3)}
    full, proposer.acceptance.full = proposer.acceptance.full, types.SimpleNamespace(most=100.0, upper=lambda: 2.0)
    measured = bound[5] * 3 / 5   # measured: 3 tokens a request, not 5
    assert probes.StepTimes._ledger(log, 5)["bound"] == round(measured, 3)
    proposer.resume_bound = True   # above `bound_only` (0 here) the measured bound also pays a resumption
    assert probes.StepTimes._ledger(log, 5)["bound"] == round(measured * proposer._resumed_share(5), 3) < measured
    proposer.resume_bound, proposer.acceptance.full = False, full
    assert probes.StepTimes._ledger(log, 0) == {}
    assert probes.StepTimes._ledger(types.SimpleNamespace(proposer=object()), 5) == {}
    proposer._plan_pause(1.5, [4], 2, opening=True)   # a round priced: logged once, with its inputs
    logged = probes.StepTimes._ledger(log, 2)
    judged = logged["judged"]
    assert judged[0] is True and judged[1:4] == [1.5, 4, 1.0] and judged[4] > 0
    assert logged["straggler"] == 1.0   # not draining: the gain carries no straggler factor
    assert "judged" not in probes.StepTimes._ledger(log, 2) and "straggler" not in probes.StepTimes._ledger(log, 2)
    proposer.draining_batch, proposer.stragglers.factor = True, lambda batch: 0.625   # a draining batch's factor
    proposer._plan_pause(1.5, [4], 2, opening=True)
    logged = probes.StepTimes._ledger(log, 2)
    assert logged["straggler"] == 0.625 and logged["judged"][4] < judged[4]   # the gain it scaled


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_lookup_rounds_are_their_own_kind(benchmark_script, monkeypatch, folders, kit, async_scheduling) -> None:
    """A round of prompt-lookup drafts only (`LookupAssist`, here over no drafter) is logged as
    "lookup", not "plain" (session 32's review: the default confidence engine's lookup rounds were
    folded into the plain steps' medians), once per lookup round."""
    from deepinfer_dspark.sps import SPSProfile

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    probes = benchmark_script("engine_probes")
    target, _ = folders
    spec = {"method": "ngram", "num_speculative_tokens": 3, "scheduling": "load_aware",
            "decode_profile": SPSProfile([1, 64], [1000.0, 990.0])}
    llm = kit.build(target, spec, async_scheduling=async_scheduling)
    log: list[dict] = []
    probes.StepTimes(llm, log)
    llm.generate([{"prompt_token_ids": p} for p in kit.prompts(1, seed=3)],
                 SamplingParams(temperature=0, max_tokens=60, ignore_eos=True))
    kinds = [row["kind"] for row in log]
    rounds = llm.engine.speculative.proposer.lookup_rounds
    assert rounds > 0 and set(kinds) == {"plain", "lookup"}
    # (asynchronous scheduling: a step call may also propose the next round, as for "drafted")
    assert kinds.count("lookup") == rounds if not async_scheduling else 1 <= kinds.count("lookup") <= rounds


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
