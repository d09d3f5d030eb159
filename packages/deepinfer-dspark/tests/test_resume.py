# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`ResumeCost` (rent or buy: resume drafting once the gain forgone pays for the flush) and the
proposer's use of it: the last requests of a large paused batch do not pay for projecting the
whole buffered context at once unless drafting there saves enough."""

from __future__ import annotations

import math
import types

import pytest
import torch
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.draft_runner import DraftOutput
from deepinfer_dspark.pending_context import PendingContext
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.resume import EXPLORE, MIN_TIMED_PAIRS, PRIOR_SECONDS_PER_PAIR, SMOOTH, ResumeCost
from deepinfer_dspark.sps import SPSProfile


def test_rent_until_the_forgone_gain_pays_for_the_flush() -> None:
    cost = ResumeCost()
    assert cost.seconds_per_pair == PRIOR_SECONDS_PER_PAIR
    price = 10_000 * PRIOR_SECONDS_PER_PAIR                      # 5 ms
    step, gain = 1e-3, 2.0                                        # each declined round forgoes 0.5 ms
    waits = [cost.waits(10_000, gain, step) for _ in range(12)]
    rounds = math.ceil(price / (step * (1 - 1 / gain)))          # 10: the tenth round's saving pays it
    assert waits == [True] * (rounds - 1) + [False] * (12 - rounds + 1), waits
    assert cost.declined == rounds - 1
    cost.timed(2e-3, 100)                                         # a flush: the forgone gain restarts
    assert cost.forgone == 0.0 and cost.seconds_per_pair == PRIOR_SECONDS_PER_PAIR   # too small to time
    assert not cost.waits(100, gain, step)                        # a price within one round: paid at once
    cost.timed(4e-3, 2 * MIN_TIMED_PAIRS)
    expected = PRIOR_SECONDS_PER_PAIR + SMOOTH * (4e-3 / (2 * MIN_TIMED_PAIRS) - PRIOR_SECONDS_PER_PAIR)
    assert cost.seconds_per_pair == pytest.approx(expected)
    # A load where drafting is expected to lose still resumes, after 1 / EXPLORE times longer.
    losing = ResumeCost()
    declined = 0
    while losing.waits(10_000, 0.8, step):
        declined += 1
    assert declined == math.ceil(price / (step * EXPLORE)) - 1


K = 4


class Runner:
    """Drafts K tokens of confidence 0.9; holds the positions it was shown; counts projections."""

    def __init__(self) -> None:
        self.drafter = types.SimpleNamespace(config=types.SimpleNamespace(block_size=K, target_layer_ids=[1]),
                                             dtype=torch.float32)
        self.held: dict[str, int] = {}
        self.projected = 0

    def num_positions(self, request_id: str) -> int:
        return self.held.get(request_id, 0)

    def observe_rows(self, items, features) -> None:
        for request_id, positions in items:
            self.held[request_id] = positions[-1] + 1

    def observe_batch(self, items) -> None:
        self.projected += sum(len(p) for _, p, _ in items)
        self.observe_rows([(r, p) for r, p, _ in items], None)

    def draft(self, requests, k):
        return [DraftOutput(torch.full((k,), 7), None, torch.full((k,), 0.9), None) for _ in requests]

    def remove(self, request_id: str) -> None:
        self.held.pop(request_id, None)


def test_the_tail_of_a_paused_batch_resumes_once_drafting_has_paid_for_the_flush() -> None:
    """64 requests decode with drafting paused (it cannot pay there), their features buffered;
    63 finish. The last one, alone, where drafting wins (gain ~1.6), declines to resume until the
    time drafting would have saved reaches the flush's price (pairs x seconds per pair), then
    projects its context and drafts; the flush is timed."""
    sps = SPSProfile([1, 5, 64, 320], [500.0, 500.0, 100.0, 20.0])
    decode = SPSProfile([1, 64], [1000.0, 900.0])
    proposer = DSparkProposer(Runner(), K, sps, decode=decode)
    ids = [f"r{i}" for i in range(64)]
    proposer.observe_step(ids, [0] * 64, [10] * 64, [10 * i for i in range(64)], torch.zeros(640, 1))   # prefill
    position = 10
    proposer.acceptance.full.add([0.9, 0.81, 0.73, 0.66], 4, 3)   # evidence: the gain at 1 can be estimated
    for _ in range(200):
        assert proposer.idle_rounds() > 0 or not any(
            d.token_ids for d in proposer.propose([DraftRequest(r, [1] * (position + 1), K, 0.0, 0, 1.0, 0.0, 0, 0)
                                                   for r in ids]))
        if proposer.idle_rounds() > 0:
            proposer.idle_round(64)
        proposer.observe_step(ids, [position] * 64, [1] * 64, list(range(64)), torch.zeros(64, 1))
        position += 1
    assert proposer.runner.projected == 0 and proposer.pending.pairs > 10_000
    for r in ids[1:]:
        proposer.remove(r)
    pairs = proposer.pending.pairs
    full = proposer.acceptance.full.mean()
    gain = proposer.costs.gain(1, 1 + full)
    saving = (1 - 1 / gain) / decode.at(1)
    declines = math.ceil(pairs * PRIOR_SECONDS_PER_PAIR / saving) - 1
    assert gain > 1 and declines > 3
    drafted = []
    for _ in range(declines + 3):
        drafts = proposer.propose([DraftRequest("r0", [1] * (position + 1), K, 0.0, 0, 1.0, 0.0, 0, 0)])
        drafted.append(bool(drafts[0].token_ids))
        if not drafted[-1]:
            proposer.observe_step(["r0"], [position], [1], [0], torch.zeros(1, 1))
            position += 1
        else:
            break
    assert drafted == [False] * declines + [True], (drafted, declines)
    assert proposer.resume.declined == declines and proposer.runner.held["r0"] == position
    assert proposer.runner.projected == position - 10 and not proposer.pending.holds   # the prefill went direct
    assert proposer.resume.seconds_per_pair != PRIOR_SECONDS_PER_PAIR   # timed (> MIN_TIMED_PAIRS pairs)


def test_pending_counts_pairs() -> None:
    pending = PendingContext()
    pending.add_step(["a", "b"], [0, 0], [2, 1], [0, 2], torch.zeros(3, 1))
    pending.add([("a", [2], torch.zeros(1, 1))])
    assert pending.pairs == 3
    pending.drop("b")
    assert pending.pairs == 3                                     # dropped pairs are still `take`'s work
    pending.take(lambda request_id: 0)
    assert pending.pairs == 0
