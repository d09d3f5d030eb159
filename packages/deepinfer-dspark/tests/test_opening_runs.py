# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`PausePolicy.opening_runs`: where the body loses, an opening round is judged with its run's
start and end (the first step's second draft, the verify-only step after the last round: one
round's worth, `RUN_TRANSITION_ROUNDS`) spread over the rounds a run over the opening takes."""

from __future__ import annotations

import pytest

from deepinfer_dspark.opening_phase import OPENING_TOKENS
from deepinfer_dspark.pause_policy import RUN_TRANSITION_ROUNDS, SETTLED_ROUNDS
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
SPS = SPSProfile([1, 5, 64, 320], [500.0, 500.0, 400.0, 150.0])
DECODE = SPSProfile([1, 64], [1000.0, 700.0])
BATCH = 2


def proposer(fake_runner, opening_runs: bool, body: float = 0.8, bound_only: int = 1,
             min_gain: float = 1.0) -> DSparkProposer:
    """One whose body ledger at `BATCH` requests has settled at `body`."""
    out = DSparkProposer(fake_runner(K, 0.9), K, SPS, decode=DECODE, probe_every=8, max_probe_every=64,
                         bound_only=bound_only, min_gain=min_gain)
    out.opening_runs = opening_runs
    for _ in range(SETTLED_ROUNDS):
        out.pauses.judge(BATCH, body)
    return out


def expected_for(p: DSparkProposer, gain: float) -> float:
    """The expected accepted drafts (summed over the batch) that price an opening round at `gain`."""
    return gain * p.costs.plain_rate(BATCH) / p.costs.round_rate(BATCH) - BATCH


def test_the_runs_share() -> None:
    """R / (R + one round), R the opening's tokens over a request's tokens a round, at least 1."""
    p = DSparkProposer.__new__(DSparkProposer)
    from deepinfer_dspark.opening_phase import OpeningPhase
    p.openings = OpeningPhase(8, 64)
    assert RUN_TRANSITION_ROUNDS == 1.0
    assert p._opening_run_share(2.0) == pytest.approx(16 / 17)
    whole = OPENING_TOKENS / (OPENING_TOKENS + 1)
    assert p._opening_run_share(0.5) == p._opening_run_share(1.0) == pytest.approx(whole)
    assert p._opening_run_share(64.0) == pytest.approx(1 / 2)


@pytest.mark.parametrize("min_gain", [1.0, 1.2])
def test_an_opening_that_wins_a_little_pauses_only_with_its_run_priced(fake_runner, min_gain: float) -> None:
    """An opening round at 2 requests judged at 1.04 where the body has settled a loss drafts on
    without `opening_runs` and pauses the openings with it (1.04 x ~0.94 < 1; the logged gain is
    the scaled one, the same under a hurdle). Where the body wins, or at `bound_only` requests and
    below, nothing changes."""
    def opening_round(p: DSparkProposer, gain: float = 1.04) -> int:
        expected = expected_for(p, gain)
        p._plan_pause(expected, [K, K], BATCH, opening=True)
        tokens = (BATCH + expected) / BATCH
        scaled = p.opening_runs and p._body_loses(BATCH) and BATCH > p.bound_only
        assert p.judged[4] == pytest.approx(gain * (p._opening_run_share(tokens) if scaled else 1.0))
        return p.openings.ledger.left(BATCH)

    assert opening_round(proposer(fake_runner, False, min_gain=min_gain)) == 0
    assert opening_round(proposer(fake_runner, True, min_gain=min_gain)) > 0
    assert opening_round(proposer(fake_runner, True, min_gain=min_gain), gain=1.1) == 0   # 1.1 x ~0.94 > 1
    assert opening_round(proposer(fake_runner, True, body=1.2, min_gain=min_gain)) == 0   # the body wins
    assert opening_round(proposer(fake_runner, True, bound_only=BATCH, min_gain=min_gain)) == 0   # averaged only


def test_the_config_key(folders, kit, benchmark_script) -> None:
    """`speculative_config.opening_runs`: off by default, set on the proposer under the
    prompt-lookup wrapper, checked by name; `confidence-opening-runs` asks for it."""
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 5, 8, 15], [900.0] * 4), "decode_profile": SPSProfile([1, 3], [1000.0] * 2)}
    assert kit.build(target, spec).engine.speculative.proposer.inner.opening_runs is False
    assert kit.build(target, {**spec, "opening_runs": True}).engine.speculative.proposer.inner.opening_runs is True
    kit.rejects_bool_key(target, drafter, "opening_runs", bad=(1,))
    variants = benchmark_script("bench_variants")
    configs = variants.variant_configs(str(drafter), [4], spec["sps_profile"], spec["decode_profile"])
    assert configs["confidence-opening-runs"]["opening_runs"] is True
    assert "confidence-opening-runs" in set(variants.NAMED) & set(variants.BY_NAME_ONLY)
