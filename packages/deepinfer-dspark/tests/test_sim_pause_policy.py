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
    base = dict(k=7, p_conf=None, concurrency=[1, 4], batches=1, overhead=[2.0, 1.0], features=None)
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


def test_cells_show_the_mean_and_the_range(sim) -> None:
    cell = sim._cell(8, [(0.90, 0.10, 0.5), (1.10, 0.30, 0.7)], 7)
    assert cell == "8: 1.000 [0.900-1.100] (20.0% drafted; fixed-7 0.600)"
    assert sim._cell(8, [(0.95, 0.25, 0.5)], 7) == "8: 0.950 (25.0% drafted; fixed-7 0.500)"


@pytest.mark.parametrize("extra, message", [(["--concurrency", "0"], "must be >= 1"),
                                            (["--p-true", "1.5"], "--p-true: probabilities in [0, 1]"),
                                            (["--k", "3"], "--k: 3, but"),
                                            (["--seeds", "0"], "--seeds: must be >= 1")])
def test_bad_arguments_name_the_field(sim, tmp_path, monkeypatch, capsys, extra, message) -> None:
    SPSProfile([1, 4], [1000.0, 950.0]).save(tmp_path / "sps.json")
    SPSProfile([8, 32], [400.0, 250.0], {"method": "dspark rounds, k=7, 128 tokens"}).save(tmp_path / "spec_sps.json")
    monkeypatch.setattr("sys.argv", ["sim_pause_policy.py", "--profiles", str(tmp_path)] + extra)
    with pytest.raises(SystemExit) as exit_:
        sim.main()
    assert exit_.value.code == 2 and message in capsys.readouterr().err
