# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`MeasuredRates`: measured / predicted step times per kind and batch bucket, with a fake clock.
(The proposer's use of it, and the engines' call orders, are in test_engine_proposers.py.)"""

from __future__ import annotations

import pytest

from deepinfer_dspark.measured_rates import PLAIN, RUN, SPEC, WINDOW, MeasuredRates, batch_bucket


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def step(rates: MeasuredRates, clock: Clock, kind: str, batch: int, took: float, predicted: float = 1.0,
         engine_steps: int = 1, clean: bool = True) -> None:
    """The proposer is asked about a step of `kind`; `engine_steps` engine steps then run."""
    rates.record(rates.start(), kind, batch, predicted)
    clock.now += took
    for _ in range(engine_steps):
        rates.observed(clean)


def test_buckets() -> None:
    assert [batch_bucket(b) for b in (0, 1, 2, 3, 4, 5, 64, 65)] == [1, 1, 2, 4, 4, 8, 64, 128]


def test_steady_steps_give_the_ratio_of_the_two_corrections() -> None:
    clock = Clock()
    rates = MeasuredRates(clock=clock)
    assert rates.ratio(7) == 1.0
    for _ in range(12):
        step(rates, clock, PLAIN, 7, took=2.0)                 # 2x the plain profile
    assert rates.ratio(7) == pytest.approx(0.5)                # rounds not measured yet: 1 / 2
    for _ in range(12):
        step(rates, clock, SPEC, 6, took=6.0, predicted=0.5)   # 12x the round profile
    step(rates, clock, PLAIN, 7, took=2.0)
    assert rates.ratio(8) == pytest.approx(6.0) and rates.ratio(5) == pytest.approx(6.0)
    assert rates.ratio(9) == 1.0 and rates.ratio(4) == 1.0     # other buckets: unmeasured
    # The first plain step has no step before it, the last a round after it; the first round a
    # plain step before it, the last one after it: intervals next to a switch are not samples.
    assert rates.samples == {(PLAIN, 8): 10, (SPEC, 8): 10}


def test_an_outlier_does_not_move_the_median_and_a_lasting_change_takes_over() -> None:
    clock = Clock()
    rates = MeasuredRates(clock=clock)
    for took in [1.0] * 6 + [50.0] + [1.0] * 3:                # a CUDA graph captured in one round
        step(rates, clock, SPEC, 1, took=took)
    assert rates.correction(SPEC, 1) == 1.0
    for _ in range(WINDOW // 2 + 3):                           # rounds now take 3x: half a window
        step(rates, clock, SPEC, 1, took=3.0)                  # (+ 2: a sample is kept a step later)
    assert rates.correction(SPEC, 1) == pytest.approx(3.0)


def test_only_single_clean_engine_steps_between_like_neighbours_count() -> None:
    """An interval over several engine steps (prefill-only steps the proposer was not asked
    about, an idle engine), over none, with a prefill chunk, or next to a switch of kind or
    bucket, is not a step time."""
    clock = Clock()
    rates = MeasuredRates(clock=clock)
    for took, steps, clean in [(2.0, 1, True), (2.0, 1, True), (30.0, 12, True), (2.0, 0, True),
                               (2.0, 1, False), (2.0, 1, True), (2.0, 1, True)]:
        step(rates, clock, PLAIN, 1, took=took, engine_steps=steps, clean=clean)
    rates.start()
    assert rates.samples == {(PLAIN, 1): 2} and rates.correction(PLAIN, 1) == 2.0   # the 2nd and 6th
    step(rates, clock, PLAIN, 2, took=5.0)                     # a bucket switch: neither side counts
    step(rates, clock, PLAIN, 1, took=5.0)
    step(rates, clock, PLAIN, 1, took=2.0)
    rates.pause()                                              # no requests: nothing stays open
    rates.start()
    rates.record(0.0, PLAIN, 0, 1.0)                           # no batch: not recorded
    rates.record(0.0, PLAIN, 1, 0.0)                           # no prediction: not recorded
    rates.observed(True)
    rates.start()
    assert rates.samples == {(PLAIN, 1): 2}


def test_rounds_of_each_kind_are_counted_for_re_timing_runs() -> None:
    """A kind is due for a run after `every` rounds of the other kind with no sample and no run
    of it at that bucket; a lone round of it does not restart the count (it yields no sample)."""
    clock = Clock()
    rates = MeasuredRates(clock=clock)
    for _ in range(5):
        rates.count(PLAIN, 3)
    assert rates.due(SPEC, 4, 5) and not rates.due(SPEC, 4, 6) and not rates.due(SPEC, 8, 5)
    assert not rates.due(PLAIN, 3, 1)
    rates.count(SPEC, 3)                                      # a lone drafted round
    assert rates.due(SPEC, 3, 5) and rates.due(PLAIN, 3, 1)
    rates.started(SPEC, 3)
    assert rates.run_left == RUN and not rates.due(SPEC, 3, 1)
    rates.count(SPEC, 3)
    assert rates.run_left == RUN - 1
    rates.started(PLAIN, 3)                                   # a plain run: run_left is for drafted runs
    assert rates.run_left == RUN - 1 and not rates.due(PLAIN, 3, 1)
    for _ in range(4):                                        # plain steps: the second and third are samples
        step(rates, clock, PLAIN, 3, took=1.0)
        rates.count(PLAIN, 3)
    step(rates, clock, PLAIN, 3, took=1.0)
    assert rates.samples[(PLAIN, 4)] >= 1 and rates._since[(PLAIN, 4)] == 0


def test_an_estimate_no_run_can_refresh_is_dropped() -> None:
    """When the batch keeps changing bucket, re-timing runs give no sample: after STALE_RUNS of
    them the old estimate goes, and the profile decides there again."""
    from deepinfer_dspark.measured_rates import STALE_RUNS

    clock = Clock()
    rates = MeasuredRates(clock=clock)
    for _ in range(8):
        step(rates, clock, SPEC, 2, took=3.0)
    assert rates.correction(SPEC, 2) == pytest.approx(3.0)
    for _ in range(STALE_RUNS):
        rates.started(SPEC, 2)
    assert rates.correction(SPEC, 2) == pytest.approx(3.0)
    rates.started(SPEC, 2)
    assert rates.correction(SPEC, 2) == 1.0 and rates.ratio(2) == 1.0


def test_an_aged_estimate_moves_on_from_where_it_was_read() -> None:
    """`relax` halves the estimate's deviation from 1 once per period of rounds counted since its
    last sample (a stretch reports many at once), and the next sample joins the aged values: the
    estimate never drops back to the bare profile while the window refills (session 36's review:
    a window cleared by that sample read 1.0 until three fresh samples came)."""
    from deepinfer_dspark.measured_rates import SPEC, MeasuredRates

    rates = MeasuredRates(clock=lambda: 0.0)
    for _ in range(3):
        rates.add(SPEC, 8, 1.4)
    rates.count("plain", 8, 600)                  # one stretch's 600 paused rounds: 2 periods of 256
    rates.relax(SPEC, 8, 256)
    assert rates.correction(SPEC, 8, least=3) == pytest.approx(1.1)
    rates.add(SPEC, 8, 1.4)                        # a fresh sample: the aged ones stay, aged
    assert list(rates.windows[(SPEC, 8)]) == pytest.approx([1.1, 1.1, 1.1, 1.4])
    assert rates.correction(SPEC, 8, least=3) == pytest.approx(1.1)
    rates.add(SPEC, 8, 1.4)
    rates.add(SPEC, 8, 1.4)
    assert rates.correction(SPEC, 8, least=3) == pytest.approx(1.4)   # fresh samples outvote them
    rates.relax(SPEC, 8, 256)                      # read with no round counted: one period at least
    assert rates.correction(SPEC, 8, least=3) == pytest.approx(1.2)



def test_a_skipped_step_gives_the_samples_start_would_give_in_other_buckets() -> None:
    """`skip` (a step at a bucket whose time no pricing reads, session 55) against `start` +
    `record` there: the step before the open one is still sampled, and the windows of every other
    bucket are the same (the samples `start` would take at the skipped step's bucket go unread)."""
    def run(skip: bool) -> dict:
        clock = Clock()
        rates = MeasuredRates(clock=clock)
        for took in (1.0, 2.0, 3.0, 4.0):   # steps at 8: each sampled once both neighbours are at 8
            step(rates, clock, SPEC, 8, took=took)
        for _ in range(3):                  # three steps at 1 request
            if skip:
                rates.skip()
            else:
                rates.record(rates.start(), SPEC, 1, 1.0)
            clock.now += 5.0
            rates.observed(True)
        for took in (6.0, 7.0, 8.0, 9.0):
            step(rates, clock, SPEC, 8, took=took)
        rates.start()
        return {key: list(window) for key, window in rates.windows.items()}

    old, new = run(False), run(True)
    assert old[(SPEC, 1)] == [5.0]   # (the middle one of the three: unread where `skip` is used)
    assert new == {(SPEC, 8): [2.0, 3.0, 7.0, 8.0]} == {k: v for k, v in old.items() if k != (SPEC, 1)}
