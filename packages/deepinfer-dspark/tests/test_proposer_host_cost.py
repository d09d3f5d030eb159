# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/proposer_host_cost.py`: it must time drafted rounds of both modes (a harness whose
confidence proposer paused would time nothing, or plain rounds)."""

from __future__ import annotations

from deepinfer_dspark.sps import SPSProfile


def test_both_modes_draft_every_round_under_paying_profiles(benchmark_script) -> None:
    script = benchmark_script("proposer_host_cost")
    decode = SPSProfile([1, 2, 8], [1000.0, 950.0, 800.0])      # plain steps of ~1 ms
    spec = SPSProfile([8, 16, 64], [330.0, 300.0, 250.0])       # k = 7 rounds of ~3-4 ms
    for batch in (1, 2):
        fixed, hook = script.round_times("fixed", batch, 200, 7, 0.9, decode, spec)
        confidence, _ = script.round_times("confidence", batch, 200, 7, 0.9, decode, spec)
        assert len(fixed) == 200 and len(confidence) == 200 and hook == 0
        assert all(t > 0 for t in fixed + confidence)


def test_the_default_runs_lean_rounds(benchmark_script, monkeypatch) -> None:
    """The "default" mode drafts every round, most of them lean (`DraftingLease`), and its draft
    hook runs less than the "unleased" mode's (a lean round's hook folds its evidence, judges
    nothing and prices no bound)."""
    script = benchmark_script("proposer_host_cost")
    decode = SPSProfile([1, 2, 8], [1000.0, 950.0, 800.0])
    spec = SPSProfile([8, 16, 64], [330.0, 300.0, 250.0])
    made = []
    build = script.DSparkProposer

    def record(*args, **kwargs):
        made.append(build(*args, **kwargs))
        return made[-1]
    monkeypatch.setattr(script, "DSparkProposer", record)
    unleased, unleased_hook = script.round_times("unleased", 1, 300, 7, 0.9, decode, spec)
    default, default_hook = script.round_times("default", 1, 300, 7, 0.9, decode, spec)
    assert len(default) == len(unleased) == 300
    assert made[0].leased_rounds == 0 and made[1].lease_rounds == script.LEASE_DEFAULT > 0
    assert made[1].leased_rounds > 200 and made[1].drafted_rounds == 300
    assert 0 < default_hook < unleased_hook


def test_a_losing_drafter_is_paused_and_its_plain_rounds_are_left_out(benchmark_script) -> None:
    """Negative control: confidences near 0.05 with a round 5x a plain step: confidence
    scheduling pauses, so most rounds are not drafted and are not timed."""
    script = benchmark_script("proposer_host_cost")
    decode = SPSProfile([1, 2], [1000.0, 1000.0])
    spec = SPSProfile([8, 16], [200.0, 200.0])
    confidence, _ = script.round_times("confidence", 1, 400, 7, 0.05, decode, spec)
    assert len(confidence) < 100
