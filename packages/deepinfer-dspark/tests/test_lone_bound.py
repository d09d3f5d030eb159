# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`PausePolicy.bound_only` (opt-in): at up to that many requests the ledgers' averages pause
nothing; drafting stops there only where the measured acceptance's upper bound cannot pay (`expected_loss`)."""

from __future__ import annotations

import pytest
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.pause_policy import SETTLED_ROUNDS
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

K = 4
DECODE = SPSProfile([1, 8], [1000.0, 1000.0])
FALLING = SPSProfile([5, 10, 20, 30, 40], [500.0, 480.0, 300.0, 260.0, 240.0])


def requests(proposer: DSparkProposer, batch: int, step: int = 40) -> list[DraftRequest]:
    """`batch` requests whose contexts hold their committed positions, `step` tokens into their replies."""
    out = []
    for i in range(batch):
        proposer.runner.held[f"r{i}"] = 39
        out.append(DraftRequest(f"r{i}", list(range(40)), K, 0.0, 0, 1.0, 0.0, 0, step))
    return out


@pytest.mark.parametrize("step", [40, 0])   # a body round; an opening round (its own ledger)
def test_a_lone_request_drafts_through_losing_rounds(fake_runner, step) -> None:
    lone = DSparkProposer(fake_runner(K, 0.05), K, FALLING, decode=DECODE)
    lone.bound_only = 1
    for _ in range(2 * SETTLED_ROUNDS):
        assert lone.propose(requests(lone, 1, step))[0].token_ids
        assert lone.judged[-1] < 1 and lone.pauses.left(1) == 0 and not lone.openings.paused(1)
    ledger = lone.openings.ledger if step == 0 else lone.pauses
    assert ledger.rounds(1) == 2 * SETTLED_ROUNDS and ledger.gain(1) < 1   # averaged all the same
    assert lone.wants_features()
    default = DSparkProposer(fake_runner(K, 0.05), K, FALLING, decode=DECODE)
    default.propose(requests(default, 1, step))
    assert default.pauses.left(1) or default.openings.paused(1)   # the ledger pauses the default
    lone.propose(requests(lone, 2, step))   # 2 requests: the ledgers judge as by default
    assert lone.pauses.left(2) > 0 or lone.openings.paused(2)


def test_the_upper_bound_still_stops_a_lone_request(fake_runner, monkeypatch) -> None:
    lone = DSparkProposer(fake_runner(K, 0.05), K, FALLING, decode=DECODE)
    lone.bound_only = 1
    lone.propose(requests(lone, 1))
    assert lone.pauses.left(1) == 0
    monkeypatch.setattr(type(lone), "expected_loss", lambda self, batch: True)   # even full acceptance loses
    assert not lone.propose(requests(lone, 1))[0].token_ids
    assert lone.pauses.left(1) > 0 and not lone.wants_features()
