# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`MeasuredRates`: measured / predicted step times per batch bucket, with a fake clock."""

from __future__ import annotations

import pytest

from deepinfer_dspark.measured_rates import PLAIN, SPEC, MeasuredRates, batch_bucket


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def step(rates: MeasuredRates, clock: Clock, kind: str, batch: int, predicted: float, took: float) -> None:
    rates.record(rates.start(), kind, batch, predicted)
    clock.now += took


def test_buckets() -> None:
    assert [batch_bucket(b) for b in (0, 1, 2, 3, 4, 5, 64, 65)] == [1, 1, 2, 4, 4, 8, 64, 128]


def test_ratio_is_round_correction_over_plain_correction() -> None:
    clock = Clock()
    rates = MeasuredRates(alpha=0.5, clock=clock)
    assert rates.ratio(7) == 1.0
    for _ in range(3):
        step(rates, clock, PLAIN, 7, predicted=0.001, took=0.002)     # 2x the plain profile
    rates.start()
    assert rates.ratio(7) == pytest.approx(0.5)                        # rounds not measured yet: 1 / 2
    for _ in range(40):
        step(rates, clock, SPEC, 6, predicted=0.002, took=0.012)       # 6x the round profile
    rates.start()                                                      # closes the last round
    assert rates.ratio(8) == pytest.approx(3.0) and rates.ratio(5) == pytest.approx(3.0)
    assert rates.ratio(9) == 1.0 and rates.ratio(4) == 1.0             # other buckets: unmeasured
    assert rates.samples[(SPEC, 8)] == 40 and rates.samples[(PLAIN, 8)] == 3


def test_moving_average_and_idle_gaps() -> None:
    clock = Clock()
    rates = MeasuredRates(alpha=0.25, max_ratio=10, clock=clock)
    step(rates, clock, PLAIN, 1, predicted=1.0, took=2.0)
    step(rates, clock, PLAIN, 1, predicted=1.0, took=6.0)              # closes the first: 2
    step(rates, clock, PLAIN, 1, predicted=1.0, took=100.0)            # closes the second: 2 + (6 - 2) / 4
    assert rates.corrections[(PLAIN, 1)] == pytest.approx(3.0)
    rates.start()                                                      # 100x: an idle engine, dropped
    assert rates.corrections[(PLAIN, 1)] == pytest.approx(3.0) and rates.samples[(PLAIN, 1)] == 2
    step(rates, clock, PLAIN, 1, predicted=1.0, took=5.0)
    rates.pause()                                                      # no requests: nothing is open
    clock.now += 1.0
    rates.start()
    assert rates.samples[(PLAIN, 1)] == 2
    rates.record(0.0, PLAIN, 0, 1.0)                                   # no batch: not recorded
    rates.record(0.0, PLAIN, 1, 0.0)                                   # no prediction: not recorded
    clock.now = 50.0
    rates.start()
    assert rates.samples[(PLAIN, 1)] == 2


def test_bad_settings_are_named() -> None:
    with pytest.raises(ValueError, match="alpha"):
        MeasuredRates(alpha=0.0)
    with pytest.raises(ValueError, match="max_ratio"):
        MeasuredRates(max_ratio=-1.0)
