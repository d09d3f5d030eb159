# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`PausePolicy.opening_runs`: where the body loses, an opening round is judged with its run's
start and end (the first step's second draft, the verify-only step after the last round) priced in,
as a probe pays them (`_probe_overhead`)."""

from __future__ import annotations

import pytest

from deepinfer_dspark.draft_costs import probe_overhead
from deepinfer_dspark.opening_phase import OPENING_TOKENS
from deepinfer_dspark.pause_policy import SETTLED_ROUNDS
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
SPS = SPSProfile([1, 5, 64, 320], [500.0, 500.0, 400.0, 150.0])   # a round at 1 request: 2 plain steps
DECODE = SPSProfile([1, 64], [1000.0, 700.0])


def proposer(fake_runner, opening_runs: bool, body: float = 0.8, bound_only: int = 0) -> DSparkProposer:
    """One whose body ledger at 1 request has settled at `body`."""
    out = DSparkProposer(fake_runner(K, 0.9), K, SPS, decode=DECODE, probe_every=8, max_probe_every=64,
                         bound_only=bound_only)
    out.opening_runs = opening_runs
    for _ in range(SETTLED_ROUNDS):
        out.pauses.judge(1, body)
    return out


def test_the_runs_share(fake_runner) -> None:
    """R rounds of c plain steps against R c plus the probe's overhead: at 1 request a round costs
    2 plain steps, a request gaining 2 tokens a round crosses the opening in 16 rounds."""
    p = proposer(fake_runner, True)
    rounds, cost = OPENING_TOKENS / 2, 1000.0 / 500.0
    assert p._opening_run_share(1, 2.0) == pytest.approx(rounds * cost / (rounds * cost + probe_overhead(1)))
    assert p._opening_run_share(1, 0.5) == p._opening_run_share(1, 1.0)                  # at least a token a round
    assert p._opening_run_share(1, 64.0) == pytest.approx(cost / (cost + probe_overhead(1)))   # at least a round


def test_an_opening_that_wins_a_little_pauses_only_with_its_run_priced(fake_runner) -> None:
    """An opening round judged at 1.05 (2.1 tokens at half a plain step's rate) where the body has
    settled a loss: it drafts on as before, and pauses the openings with `opening_runs` (1.05 times
    a share of ~0.84). Where the body wins, or up to `bound_only` requests, nothing changes."""
    def opening_round(p: DSparkProposer) -> int:
        p._plan_pause(1.1, [K], 1, opening=True)
        assert p.judged[4] == pytest.approx(1.05)   # (the round's own gain, as logged, before the opening's pricing)
        return p.openings.ledger.left(1)

    assert opening_round(proposer(fake_runner, False)) == 0
    assert opening_round(proposer(fake_runner, True)) > 0
    assert 1.05 * proposer(fake_runner, True)._opening_run_share(1, 2.1) < 0.9
    assert opening_round(proposer(fake_runner, True, body=1.2)) == 0            # the body wins: the run goes on
    assert opening_round(proposer(fake_runner, True, bound_only=1)) == 0         # averaged only there


def test_the_config_key(folders, kit, benchmark_script) -> None:
    """`speculative_config.opening_runs`: off by default, set on the proposer under the
    prompt-lookup wrapper, checked by name; `confidence-opening-runs` asks for it."""
    target, drafter = folders
    spec = {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4, "scheduling": "confidence",
            "sps_profile": SPSProfile([1, 5, 8, 15], [900.0] * 4), "decode_profile": SPSProfile([1, 3], [1000.0] * 2)}
    assert kit.build(target, spec).engine.speculative.proposer.inner.opening_runs is False
    assert kit.build(target, {**spec, "opening_runs": True}).engine.speculative.proposer.inner.opening_runs is True
    with pytest.raises(ValueError, match="speculative_config.opening_runs"):
        kit.build(target, {**spec, "opening_runs": 1})
    with pytest.raises(ValueError, match="speculative_config.opening_runs"):
        kit.build(target, {"method": "dspark", "model": str(drafter), "num_speculative_tokens": 4,
                           "opening_runs": True})
    variants = benchmark_script("bench_variants")
    configs = variants.variant_configs(str(drafter), [4], spec["sps_profile"], spec["decode_profile"])
    assert configs["confidence-opening-runs"]["opening_runs"] is True
    assert "confidence-opening-runs" in set(variants.NAMED) & set(variants.BY_NAME_ONLY)
