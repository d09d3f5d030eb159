# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`PausePolicy.young_runs`: above `bound_only` requests a young bucket's losing round pauses
nothing, so the bucket drafts on until its ledger settles (`SETTLED_ROUNDS` judged rounds); from
then on a loss pauses as it would without it (the settled pause, the features declined)."""

from __future__ import annotations

import random

import pytest
from deepinfer_core.engine.dormant_steps import DormantSteps

from deepinfer_dspark.pause_policy import SETTLED_ROUNDS
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
SPS = SPSProfile([1, 5, 64, 320], [500.0, 500.0, 400.0, 150.0])
DECODE = SPSProfile([1, 64], [1000.0, 700.0])
BATCH = 8


def proposer(fake_runner, young_runs: bool, bound_only: int = 1) -> DSparkProposer:
    out = DSparkProposer(fake_runner(K, 0.9), K, SPS, decode=DECODE, probe_every=8, max_probe_every=64,
                         bound_only=bound_only)
    out.young_runs = young_runs
    return out


def losing_round(p: DSparkProposer, gain: float = 0.8, partial: bool = False) -> int:
    """Judges one body round at `BATCH` priced at `gain`; the rounds its bucket is then paused."""
    expected = gain * p.costs.plain_rate(BATCH) / p.costs.round_rate(BATCH) - BATCH
    p._plan_pause(expected, [K] * BATCH, BATCH, partial=partial)
    assert p.judged[4] == pytest.approx(gain)
    return p.pauses.left(BATCH)


def test_a_young_bucket_drafts_on_until_it_settles(fake_runner) -> None:
    """Without `young_runs` the first losing round pauses the bucket; with it the first
    `SETTLED_ROUNDS - 1` do not, and the round that settles the ledger pauses as long as the
    settled loss asks (longer than a young one: the probe's overhead too) and declines the features."""
    plain = proposer(fake_runner, False)
    young = losing_round(plain)   # the round's own loss over the probe share (no probe overhead)
    assert young == max(8, plain.costs.probe_pause(BATCH, 0.8, 0.0)) > 0
    p = proposer(fake_runner, True)
    for n in range(1, SETTLED_ROUNDS):
        assert losing_round(p) == 0, n
        assert p.pauses.rounds(BATCH) == n
        assert not p._ruled_out
    settled = losing_round(p)
    assert settled > young
    assert settled == p.costs.probe_pause(BATCH, 0.8, p._probe_overhead(BATCH))
    assert p._ruled_out   # (`ledger_decline`: the settled loss declines the features)


def test_what_it_leaves_alone(fake_runner) -> None:
    """A partial round still pauses at once; at `bound_only` requests or below nothing pauses
    either way; a bucket a smaller bucket's settled loss was inferred at is priced as settled."""
    assert losing_round(proposer(fake_runner, True), partial=True) > 0
    assert losing_round(proposer(fake_runner, True, bound_only=BATCH)) == 0
    p = proposer(fake_runner, True)
    p._inferred.add(BATCH)
    assert losing_round(p) > 0


def test_through_the_engines_call_sequence(benchmark_script) -> None:
    """Driven by the engine's own calls (`sim_engine_calls.run_batch`: `DormantSteps`, `propose`),
    a batch of 2 whose body rounds lose (k = 7 at 300 rounds/s against ~1000 plain steps/s) drafts
    one body round then pauses with the features kept ("q") without `young_runs`; with it the body
    drafts `SETTLED_ROUNDS` rounds in a row, then the settled loss declines them ("z")."""
    sim = benchmark_script("sim_engine_calls")
    spec, decode = SPSProfile([8, 32], [400.0, 100.0]), SPSProfile([1, 4], [1000.0, 950.0])
    marks = {}
    for young in (False, True):
        p = DSparkProposer(sim.sim.FakeRunner(7, 0.7, random.Random(0), sim.EARLY), 7, spec, decode=decode,
                           bound_only=1)
        p.young_runs = young
        clock = sim.Clock(decode, spec, 7, 0.02, 1.5, 0.9)
        marks[young] = "".join(sim.run_batch(p, DormantSteps(p), [128, 128], ["a", "b"], random.Random(0), clock))
        assert p.pauses.rounds(2) == (SETTLED_ROUNDS if young else 1)
    body = marks[False].index("D", 1)   # the first body round (the openings' rounds before it: "B")
    assert marks[True][:body] == marks[False][:body]
    assert marks[False][body:body + 4] == "Dqqq"
    run = "D" * SETTLED_ROUNDS
    assert marks[True][body:body + SETTLED_ROUNDS + 4] == run + "zzzz", marks[True]


def test_the_config_key(folders, kit, benchmark_script) -> None:
    """`speculative_config.young_runs`: on by default (`YOUNG_RUNS_DEFAULT`, session 67), set on the
    proposer under the prompt-lookup wrapper, checked by name; `confidence-young-runs` and
    `-young-share` ask for it."""
    target, drafter = folders
    spec = kit.confidence_spec(drafter)
    assert kit.dspark_proposer(target, spec).young_runs is True
    assert kit.dspark_proposer(target, {**spec, "young_runs": False}).young_runs is False
    kit.rejects_bool_key(target, drafter, "young_runs")   # (and confidence scheduling only)
    variants = benchmark_script("bench_variants")
    configs = variants.variant_configs(str(drafter), [4], spec["sps_profile"], spec["decode_profile"])
    assert configs["confidence-young-runs"]["young_runs"] is True
    assert configs["confidence-young-share"]["young_runs"] is True
    assert configs["confidence-young-share"]["probe_share"] == 0.005
    names = {"confidence-young-runs", "confidence-young-share"}
    assert names <= set(variants.NAMED) & set(variants.BY_NAME_ONLY)


def test_the_probe_transition_key(folders, kit, benchmark_script) -> None:
    """`speculative_config.probe_transition` (session 68's candidate): off by default, set on the
    proposer under the prompt-lookup wrapper, checked by name and confidence-only;
    `confidence-probe-transition` asks for it."""
    target, drafter = folders
    spec = kit.confidence_spec(drafter)
    assert kit.dspark_proposer(target, spec).probe_transition is False
    assert kit.dspark_proposer(target, {**spec, "probe_transition": True}).probe_transition is True
    kit.rejects_bool_key(target, drafter, "probe_transition")
    variants = benchmark_script("bench_variants")
    configs = variants.variant_configs(str(drafter), [4], spec["sps_profile"], spec["decode_profile"])
    assert configs["confidence-probe-transition"]["probe_transition"] is True
    assert "probe_transition" not in configs["confidence"]
    assert "confidence-probe-transition" in set(variants.NAMED) & set(variants.BY_NAME_ONLY)


def test_probe_transition_lengthens_the_settled_pause(fake_runner) -> None:
    """With timed rounds, a settled loss's pause prices the next probe's run transition too
    (`probe_transition`): longer than without it, by `probe_pause` with the larger overhead."""
    pauses = {}
    for transition in (False, True):
        p = proposer(fake_runner, True)
        p.measure_round_times, p.probe_transition = True, transition
        for _ in range(SETTLED_ROUNDS - 1):
            assert losing_round(p) == 0
        pauses[transition] = losing_round(p)
        assert pauses[transition] == p.costs.probe_pause(BATCH, 0.8, p._probe_overhead(BATCH))
    assert pauses[True] > pauses[False]
