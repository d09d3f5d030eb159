# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`benchmarks/sim_pause_policy.py --seeds`: each seed is one reproducible run; the cells report
the mean over the seeds and the range of the policy's ratio."""

from __future__ import annotations

import types

import pytest

from deepinfer_dspark.sps import SPSProfile

# A round of 8 tokens (1 request, k = 7) at 400/s against 1000 plain steps/s: drafting wins alone
# when ~1.5 drafts are accepted; at 4 requests (32 tokens) it needs more.
SPEC = SPSProfile([8, 32], [400.0, 250.0])
DECODE = SPSProfile([1, 4], [1000.0, 950.0])


@pytest.fixture
def sim(benchmark_script):
    return benchmark_script("sim_pause_policy")


def args(**kw):
    base = dict(k=7, p_conf=None, concurrency=[1, 4], batches=1, overhead=[2.0, 1.0], features=None, early=None,
                calibrated=False)
    return types.SimpleNamespace(**{**base, **kw})


def test_a_seed_is_reproducible_and_seeds_differ(sim) -> None:
    first = sim.simulate(args(), DECODE, SPEC, 0.7, None, None, seed=0)
    assert first == sim.simulate(args(), DECODE, SPEC, 0.7, None, None, seed=0)
    other = sim.simulate(args(), DECODE, SPEC, 0.7, None, None, seed=1)
    assert other != first
    for ratio, share, fixed in first + other:
        assert ratio > 0 and 0.0 <= share <= 1.0 and fixed > 0


def test_feature_costs_are_charged(sim) -> None:
    """With `--features`, plain steps that capture the features cost more: a policy whose
    drafter loses (acceptance 0.2: it pauses, keeping the features at loads not ruled out) runs
    slower as CAPTURE grows; every step observed (no `--features`) is the old model."""
    free = sim.simulate(args(features=[0.0, 0.0]), DECODE, SPEC, 0.2, None, None, seed=0)
    costly = sim.simulate(args(features=[0.5, 0.0]), DECODE, SPEC, 0.2, None, None, seed=0)
    old = sim.simulate(args(), DECODE, SPEC, 0.2, None, None, seed=0)
    assert all(c[0] < f[0] for c, f in zip(costly, free)), (costly, free)
    assert all(o[0] > 0 for o in old)


def test_full_round_pricing_drafts_where_full_rounds_win(sim) -> None:
    """`--full-round` (`prefix_pricing`): at 4 requests a full round of 32 tokens (250/s) with
    ~3.2 drafts accepted per request (acceptance 0.8) beats plain decoding, but the profile read at
    fewer tokens makes Algorithm 1 verify short prefixes, which the pause policy (pricing the full
    round) judges losses. Priced as full rounds, every draft is verified and drafting goes on."""
    profile = sim.simulate(args(concurrency=[4]), DECODE, SPEC, 0.8, None, None, seed=0)
    full = sim.simulate(args(concurrency=[4]), DECODE, SPEC, 0.8, None, None, seed=0, full_round=True)
    assert full[0][1] > profile[0][1] and full[0][0] > profile[0][0], (profile, full)


def test_early_tokens_accept_less(sim) -> None:
    """`--early TOKENS P`: a reply's first TOKENS tokens accept with P, so fixed-k (the third
    number) runs slower when P is lower than the rest's acceptance, and equally when P equals it."""
    base = sim.simulate(args(concurrency=[1]), DECODE, SPEC, 0.8, None, None, seed=0)
    early = sim.simulate(args(concurrency=[1], early=[40, 0.3]), DECODE, SPEC, 0.8, None, None, seed=0)
    same = sim.simulate(args(concurrency=[1], early=[40, 0.8]), DECODE, SPEC, 0.8, None, None, seed=0)
    assert early[0][2] < 0.9 * base[0][2] and same[0][2] == pytest.approx(base[0][2]), (base, early, same)


def test_calibrated_drafts_accept_as_their_confidences_say(sim) -> None:
    """`--calibrated`: each draft is accepted with its own confidence, so the realized accepted
    drafts match the predicted ones (the proposer's learnt ratio near 1); with constant acceptance
    below the confidences (0.4 against 0.8) the ratio falls well below 1."""
    import random

    from deepinfer_dspark.proposers import DSparkProposer

    def ratio(calibrated: bool, p_true: float, level: float) -> float:
        proposer = DSparkProposer(sim.FakeRunner(7, level, random.Random(0)), 7, SPEC, decode=DECODE)
        sim.policy_seconds(proposer, DECODE, SPEC, p_true, sim.batches(1, 40, seed=1), 2, 0, calibrated=calibrated)
        return proposer.acceptance.ratio(1)

    assert 0.85 < ratio(True, 0.8, 0.8) < 1.15
    assert ratio(False, 0.4, 0.8) < 0.7


def test_opening_tokens_reach_the_proposer(sim) -> None:
    """`--opening-tokens`: openings that accept little (0.3 in the first 40 tokens, 0.85 after)
    judged apart (32), the bodies of the replies are drafted at 1 request and the policy runs
    faster than with each reply judged as one (0)."""
    apart = sim.simulate(args(concurrency=[1], early=[40, 0.3], calibrated=True, opening_tokens=32), DECODE, SPEC,
                         0.85, None, None, seed=0)
    whole = sim.simulate(args(concurrency=[1], early=[40, 0.3], calibrated=True, opening_tokens=0), DECODE, SPEC,
                         0.85, None, None, seed=0)
    assert apart[0][0] > 1.02 * whole[0][0], (apart, whole)


def test_cells_show_the_mean_and_the_range(sim) -> None:
    cell = sim._cell(8, [(0.90, 0.10, 0.5), (1.10, 0.30, 0.7)], 7)
    assert cell == "8: 1.000 [0.900-1.100] (20.0% drafted; fixed-7 0.600)"
    assert sim._cell(8, [(0.95, 0.25, 0.5)], 7) == "8: 0.950 (25.0% drafted; fixed-7 0.500)"


@pytest.mark.parametrize("extra, message", [(["--concurrency", "0"], "must be >= 1"),
                                            (["--p-true", "1.5"], "--p-true: probabilities in [0, 1]"),
                                            (["--k", "3"], "--k: 3, but"),
                                            (["--seeds", "0"], "--seeds: must be >= 1"),
                                            (["--early", "30", "1.5"], "--early: TOKENS >= 0 and P in [0, 1]"),
                                            (["--opening-tokens", "-1"], "--opening-tokens: must be >= 0")])
def test_bad_arguments_name_the_field(sim, tmp_path, monkeypatch, capsys, extra, message) -> None:
    SPSProfile([1, 4], [1000.0, 950.0]).save(tmp_path / "sps.json")
    SPSProfile([8, 32], [400.0, 250.0], {"method": "dspark rounds, k=7, 128 tokens"}).save(tmp_path / "spec_sps.json")
    monkeypatch.setattr("sys.argv", ["sim_pause_policy.py", "--profiles", str(tmp_path)] + extra)
    with pytest.raises(SystemExit) as exit_:
        sim.main()
    assert exit_.value.code == 2 and message in capsys.readouterr().err
