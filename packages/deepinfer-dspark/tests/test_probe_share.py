# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`speculative_config.probe_share`: the share of the time probes may lose at a losing load. It
sets the pause after a losing probe (`DraftCosts.probe_pause`: the probe's loss over the share)
and the keep cost above which a young loss declines the features (`FeatureKeeping._dear_to_keep`)."""

from __future__ import annotations

import math

import pytest

from deepinfer_dspark.draft_costs import LONGEST_PROBE_PAUSE, PROBE_SHARE, DraftCosts, probe_overhead
from deepinfer_dspark.factories import dspark_factory
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

ROUNDS = SPSProfile([5, 50], [400.0, 100.0])    # k = 4: 1 request -> 5 tokens, 10 -> 50
PLAIN = SPSProfile([1, 10], [1000.0, 800.0])
DECODE = SPSProfile([1, 8], [1000.0, 1000.0])   # plain steps: 1 ms up to 8 requests
FALLING = SPSProfile([5, 10, 20, 30, 40], [500.0, 480.0, 300.0, 260.0, 240.0])


def costs(share: float | None) -> DraftCosts:
    return DraftCosts(4, ROUNDS, PLAIN, lambda b: 1.0, probe_share=share)


def test_the_pause_is_the_probes_loss_over_the_share() -> None:
    """A probe at 1 request with gain 0.6 loses 1000 / 400 x 0.4 = 1 plain step besides its
    overhead (`probe_overhead(1)`: 6); the pause spreads that over the share."""
    lost = PLAIN.at(1) / ROUNDS.at(5) * 0.4 + probe_overhead(1)
    assert costs(None).probe_share == PROBE_SHARE
    assert costs(None).probe_pause(1, 0.6) == math.ceil(lost / PROBE_SHARE)
    for share in (0.05, 0.01, 1.0):
        assert costs(share).probe_pause(1, 0.6) == math.ceil(lost / share)
    assert costs(0.005).probe_pause(1, 0.6) == min(math.ceil(lost / 0.005), LONGEST_PROBE_PAUSE)
    assert costs(0.001).probe_pause(1, 0.6) == LONGEST_PROBE_PAUSE   # 7,000 rounds: capped
    for bad in (0, 0.0, -0.01, 1.01, math.nan, math.inf, True, "0.01", [0.01]):
        with pytest.raises(ValueError, match=r"^speculative_config.probe_share: must be a number in \(0, 1\]"):
            costs(bad)


@pytest.mark.parametrize("share, declined", [(None, True), (0.05, True), (0.09, False)])
def test_a_young_loss_declines_where_keeping_costs_more_than_the_share(fake_runner, share, declined) -> None:
    """Flushes cost 20 us a pair: keeping the features costs 0.08 plain steps a step at 4
    requests, where a full round loses (as in `test_keep_cost.py`): declined under the default
    share and 0.05, kept under 0.09."""
    proposer = DSparkProposer(fake_runner(4, 0.7), 4, FALLING, decode=DECODE, measure_round_times=True)
    for pairs in (0, 1, 100, 300):   # 20 us a pair (the first flush, cold, is left out)
        proposer.flush_costs.record(4, 0.003 + 20e-6 * pairs, pairs > 0, pairs)
    proposer.acceptance.full.mean = lambda: 1.77
    if share is not None:
        proposer.costs.probe_share = share
    assert proposer._keep_cost(4) == pytest.approx(0.08)
    assert proposer._dear_to_keep(4) is declined


def test_the_factory_key(tmp_path) -> None:
    base = {"model": str(tmp_path), "scheduling": "confidence", "sps_profile": ROUNDS, "decode_profile": PLAIN}
    assert dspark_factory.validate(base)["probe_share"] is None
    assert dspark_factory.validate({**base, "probe_share": 0.005})["probe_share"] == 0.005
    assert dspark_factory.validate({**base, "probe_share": 1})["probe_share"] == 1.0
    for bad in (0, -1, 2, math.nan, True, "0.01"):
        with pytest.raises(ValueError, match="^speculative_config.probe_share: must be a number"):
            dspark_factory.validate({**base, "probe_share": bad})
    with pytest.raises(ValueError, match="^speculative_config.probe_share: prices .*decode_profile"):
        dspark_factory.validate({k: v for k, v in base.items() if k != "decode_profile"} | {"probe_share": 0.01})
    with pytest.raises(ValueError, match="^speculative_config.probe_share: only used with scheduling"):
        dspark_factory.validate({"model": str(tmp_path), "scheduling": "fixed", "probe_share": 0.01})


def test_the_engine_passes_the_share_to_the_pause_policy(folders, kit) -> None:
    """`probe_share` reaches the proposer's costs (through the prompt-lookup wrapper); absent, the
    module's `PROBE_SHARE`."""
    target, drafter = folders
    spec = kit.confidence_spec(drafter)
    assert kit.dspark_proposer(target, spec).costs.probe_share == PROBE_SHARE
    assert kit.dspark_proposer(target, {**spec, "probe_share": 0.005}).costs.probe_share == 0.005
