# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`FlushCosts`: the flush's cost a probe pays, timed on a fake clock, and the pause it sizes."""

from __future__ import annotations

import pytest
import torch
from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.draft_costs import probe_overhead
from deepinfer_dspark.flush_costs import FlushCosts
from deepinfer_dspark.pause_policy import RUN_TRANSITION_ROUNDS, SYNC_STEPS
from deepinfer_dspark.proposers import DSparkProposer
from deepinfer_dspark.sps import SPSProfile

SPS = SPSProfile([1, 5, 64], [500.0, 500.0, 400.0])
DECODE = SPSProfile([1, 64], [1000.0, 700.0])
K = 4


class Clock:
    """A fake monotonic clock: `now` seconds, set by the test."""

    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_extra_is_the_median_span_with_a_flush_over_the_median_without() -> None:
    clock = Clock()
    costs = FlushCosts(clock)
    assert costs.extra(8) is None
    for span, flushed in [(0.002, False), (0.0021, False), (0.009, True), (0.030, True), (0.007, True)]:
        began = clock.now
        clock.now += span
        costs.add(8, began, flushed)
    assert costs.extra(8) == pytest.approx(0.009 - 0.00205)
    assert costs.extra(5) == pytest.approx(0.009 - 0.00205)   # 5-8: one bucket
    assert costs.extra(16) is None and costs.extra(4) is None


def test_without_rounds_unflushed_at_the_bucket_a_smaller_bucket_or_nothing_is_subtracted() -> None:
    clock = Clock()
    costs = FlushCosts(clock)
    clock.now = 0.010
    costs.add(16, 0.0, True)                     # 10 ms with a flush at 16, nothing else timed
    assert costs.extra(16) == pytest.approx(0.010)
    clock.now = 0.013
    costs.add(4, 0.010, False)                   # 3 ms without at 4: the largest smaller bucket's
    assert costs.extra(16) == pytest.approx(0.007)
    clock.now = 0.020
    costs.add(16, 0.019, False)                  # 1 ms without at 16 itself
    assert costs.extra(16) == pytest.approx(0.009)
    clock.now = 0.0203
    for _ in range(4):
        costs.add(16, 0.02, True)                # spans below the one without: never negative
    assert costs.extra(16) == 0.0
    clock.now = 0.001
    costs.add(16, 0.005, True)                   # a clock that went back, or NaN: no sample
    clock.now = float("nan")
    costs.add(16, 0.005, True)
    assert costs.extra(16) == 0.0 and len(costs._spans[(True, 16)]) == 5


@pytest.mark.parametrize("timed", [True, False])
def test_a_dear_flush_lengthens_the_probe_overhead_only_when_rounds_are_timed(fake_runner, timed) -> None:
    """A probe's overhead: `probe_overhead` (2.5 plain steps at 8), or the flush measured there (at
    most one full round: a flush grows with the pause before it) plus `SYNC_STEPS` when that is
    more; rounds priced on the profiles alone keep the model."""
    proposer = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, measure_round_times=timed)
    clock = Clock()
    proposer.flush_costs = FlushCosts(clock)
    assert proposer._probe_overhead(8) == probe_overhead(8)
    for span, flushed in [(0.003, False), (0.015, True)]:
        began = clock.now
        clock.now += span
        proposer.flush_costs.add(8, began, flushed)
    round_steps = DECODE.at(8) / proposer.costs.round_rate(8)   # the cap: one full round (~2.2 plain steps)
    steps = min(0.012 * DECODE.at(8), round_steps) + SYNC_STEPS
    assert 0.012 * DECODE.at(8) > round_steps and steps > probe_overhead(8)
    assert proposer._probe_overhead(8) == (pytest.approx(steps) if timed else probe_overhead(8))
    loss = proposer.costs.probe_pause(8, 0.8, proposer._probe_overhead(8))
    assert (loss > proposer.costs.probe_pause(8, 0.8)) is timed


@pytest.mark.parametrize("timed", [True, False])
def test_probe_transition_adds_a_rounds_time_when_rounds_are_timed(fake_runner, timed) -> None:
    """`probe_transition`: the timed overhead also counts the run's transition
    (`RUN_TRANSITION_ROUNDS` rounds' time), with or without a flush measured; untimed rounds keep
    the model, and without the flag the overhead is as before."""
    proposer = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE, measure_round_times=timed)
    clock = Clock()
    proposer.flush_costs = FlushCosts(clock)
    round_steps = DECODE.at(8) / proposer.costs.round_rate(8)
    for flush in (None, 0.001):
        if flush is not None:
            for span, flushed in [(0.003, False), (0.003 + flush, True)]:
                began = clock.now
                clock.now += span
                proposer.flush_costs.add(8, began, flushed)
        proposer.probe_transition = False
        before = proposer._probe_overhead(8)
        proposer.probe_transition = True
        measured = SYNC_STEPS + (0.0 if flush is None else flush * DECODE.at(8)) + RUN_TRANSITION_ROUNDS * round_steps
        assert measured > probe_overhead(8)
        assert proposer._probe_overhead(8) == (pytest.approx(measured) if timed else before)
        assert before == (pytest.approx(max(probe_overhead(8), measured - round_steps)) if timed else probe_overhead(8))


def test_propose_times_its_span_with_and_without_a_flush(fake_runner) -> None:
    """The round after a pause with features buffered flushes them first: timed as flushed; the
    next round, with nothing buffered, as not."""
    proposer = DSparkProposer(fake_runner(K, 0.95), K, SPS, decode=DECODE)
    clock = Clock()
    proposer.flush_costs = FlushCosts(clock)
    proposer.feed.pending.add([("r0", list(range(9)), torch.zeros(9, 1))])   # buffered while paused
    flush = proposer.feed.flush

    def slow_flush() -> None:
        clock.now += 0.02
        flush()

    proposer.feed.flush = slow_flush
    for step in range(2):
        tokens = list(range(10 + step * (K + 1)))
        proposer.propose([DraftRequest("r0", tokens, K, 0.0, 0, 1.0, 0.0, 0, len(tokens) - 1)])
        proposer.feed.add_items([("r0", list(range(len(tokens) - 1, len(tokens) + K)), torch.zeros(K + 1, 1))],
                                False)
    assert proposer.flush_costs.extra(1) == pytest.approx(0.02)
