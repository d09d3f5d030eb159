# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""A settled losing average pauses for the probes' overhead only when it is a clear loss
(`clear_loss`, `PausePolicy._plan_pause`): on the H200 (session 42, call 7) bucket 1 settled at
0.993 while the engine warmed up and paused 363 rounds, 8 of 12 calls at 1 request, where its
rounds then read 1.39-1.44. Near break-even the pause is the backoff's; the settled loss still
declines the features and spreads, for that shorter pause.
"""

from __future__ import annotations

import math

import pytest
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.draft_costs import PROBE_OVERHEAD_STEPS, PROBE_SHARE
from deepinfer_dspark.factories import dspark_factory
from deepinfer_dspark.pause_policy import CLEAR_LOSS, SETTLED_ROUNDS
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
DECODE = SPSProfile([1, 8], [1000.0, 1000.0])
# As test_loss_spread.py: confidences 0.7 lose at 4 requests (~0.83), and no bucket of 4-8 is `cannot_pay`.
FALLING = SPSProfile([5, 10, 20, 30, 40], [500.0, 480.0, 300.0, 260.0, 240.0])
LONG = math.ceil(PROBE_OVERHEAD_STEPS / PROBE_SHARE)   # the shortest pause after a clear settled loss


def requests(proposer: DSparkProposer, batch: int, step: int = 40) -> list[DraftRequest]:
    """`batch` requests whose drafter context holds their 9 committed positions, at reply position `step`."""
    for i in range(batch):
        proposer.runner.held[f"r{i}"] = 9
    return [DraftRequest(f"r{i}", list(range(10)), K, 0.0, 0, 1.0, 0.0, 0, step) for i in range(batch)]


def settled(fake_runner, mean: float, **kwargs) -> DSparkProposer:
    """A proposer whose bucket of 4 requests judged `SETTLED_ROUNDS` rounds at `mean`, then drafted
    one losing round there."""
    proposer = DSparkProposer(fake_runner(K, 0.7), K, FALLING, decode=DECODE, **kwargs)
    for _ in range(SETTLED_ROUNDS):
        proposer.pauses.judge(4, mean)
    assert any(d.token_ids for d in proposer.propose(requests(proposer, 4)))
    return proposer


def test_a_settled_average_near_break_even_pauses_for_the_backoff(fake_runner) -> None:
    near = settled(fake_runner, 1.0)
    gain = near.pauses.gain(4)
    assert 1 - CLEAR_LOSS < gain <= 1                          # a loss, not a clear one
    round_gain = 1.0 + (SETTLED_ROUNDS + 1) * (gain - 1.0)   # the round folded into the mean of 1.0
    pause = near.pauses.left(4)
    assert round_gain < 1 and pause == max(near.probe_every, near.costs.probe_pause(4, round_gain, 0.0)) < LONG
    assert not near.wants_features()                           # settled: declined all the same
    assert near.pauses.left(8) == pause                        # and spread, as long
    clear = settled(fake_runner, 0.8)
    assert clear.pauses.gain(4) <= 1 - CLEAR_LOSS and clear.pauses.left(4) >= LONG
    clear_round = 0.8 + (SETTLED_ROUNDS + 1) * (clear.pauses.gain(4) - 0.8)
    assert clear.pauses.left(4) == clear.costs.probe_pause(4, clear_round, clear._probe_overhead(4)) > pause


def test_clear_loss_zero_pauses_every_settled_loss_long(fake_runner) -> None:
    """`clear_loss` 0 is the rule until session 42: the same average near break-even pauses as long
    as a clear loss."""
    old = settled(fake_runner, 1.0, clear_loss=0.0)
    assert old.pauses.gain(4) > 1 - CLEAR_LOSS and old.pauses.left(4) >= LONG


def test_the_openings_ledger_alike(fake_runner) -> None:
    """An opening round (every request in its reply's first `OPENING_TOKENS`) after a settled
    openings average near break-even pauses the openings for the backoff, not the overhead."""
    for mean, clear in ((1.0, False), (0.7, True)):
        proposer = DSparkProposer(fake_runner(K, 0.7), K, FALLING, decode=DECODE)
        for _ in range(SETTLED_ROUNDS):
            proposer.openings.ledger.judge(4, mean)
        assert any(d.token_ids for d in proposer.propose(requests(proposer, 4, step=0)))
        ledger = proposer.openings.ledger
        assert ledger.rounds(4) == SETTLED_ROUNDS + 1 and proposer.pauses.rounds(4) == 0
        assert (ledger.gain(4) <= 1 - CLEAR_LOSS) == clear
        assert (ledger.left(4) >= LONG) == clear and ledger.left(4) > 0


def test_the_factory_reads_clear_loss(tmp_path) -> None:
    base = {"model": str(tmp_path), "scheduling": "confidence", "sps_profile": FALLING, "decode_profile": DECODE}
    assert dspark_factory.validate(base)["clear_loss"] == CLEAR_LOSS
    assert dspark_factory.validate({**base, "clear_loss": 0})["clear_loss"] == 0.0
    assert dspark_factory.validate({**base, "clear_loss": 0.2})["clear_loss"] == 0.2
    for bad in (-0.1, 0.6, True, "0.1", float("nan")):
        with pytest.raises(ValueError, match="speculative_config.clear_loss"):
            dspark_factory.validate({**base, "clear_loss": bad})
    with pytest.raises(ValueError, match="speculative_config.clear_loss"):
        dspark_factory.validate({"model": str(tmp_path), "scheduling": "fixed", "clear_loss": 0.1})
