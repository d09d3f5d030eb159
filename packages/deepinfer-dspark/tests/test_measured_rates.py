# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`MeasuredRates`: measured / predicted step times per batch bucket, with a fake clock."""

from __future__ import annotations

import pytest

from deepinfer_dspark.measured_rates import CLIP, PLAIN, SPEC, MeasuredRates, batch_bucket


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def step(rates: MeasuredRates, clock: Clock, kind: str, batch: int, predicted: float, took: float,
         engine_steps: int = 1, clean: bool = True) -> None:
    """The proposer is asked about a step of `kind`; `engine_steps` engine steps then run."""
    rates.record(rates.start(), kind, batch, predicted)
    clock.now += took
    for _ in range(engine_steps):
        rates.observed(clean)


def test_buckets() -> None:
    assert [batch_bucket(b) for b in (0, 1, 2, 3, 4, 5, 64, 65)] == [1, 1, 2, 4, 4, 8, 64, 128]


def test_ratio_is_round_correction_over_plain_correction() -> None:
    clock = Clock()
    rates = MeasuredRates(alpha=0.5, clock=clock)
    assert rates.ratio(7) == 1.0
    for _ in range(20):
        step(rates, clock, PLAIN, 7, predicted=0.001, took=0.002)     # 2x the plain profile
    rates.start()
    assert rates.ratio(7) == pytest.approx(0.5)                        # rounds not measured yet: 1 / 2
    for _ in range(40):
        step(rates, clock, SPEC, 6, predicted=0.002, took=0.012)       # 6x the round profile
    rates.start()
    assert rates.ratio(8) == pytest.approx(3.0) and rates.ratio(5) == pytest.approx(3.0)
    assert rates.ratio(9) == 1.0 and rates.ratio(4) == 1.0             # other buckets: unmeasured
    assert rates.samples[(SPEC, 8)] == 40 and rates.samples[(PLAIN, 8)] == 20


def test_an_outlier_is_clipped_and_fades() -> None:
    """One round 50x its profile (a CUDA graph captured in it) moves the estimate by at most
    alpha x (CLIP - 1); rounds on profile then bring it back to 1."""
    clock = Clock()
    rates = MeasuredRates(alpha=0.25, clock=clock)
    step(rates, clock, SPEC, 1, predicted=1.0, took=50.0)
    step(rates, clock, SPEC, 1, predicted=1.0, took=1.0)
    assert rates.corrections[(SPEC, 1)] == pytest.approx(1 + 0.25 * (CLIP - 1))
    for _ in range(60):
        step(rates, clock, SPEC, 1, predicted=1.0, took=1.0)
    rates.start()
    assert rates.corrections[(SPEC, 1)] == pytest.approx(1.0, abs=1e-6)


def test_only_single_clean_engine_steps_count() -> None:
    """An interval over several engine steps (prefill-only steps the proposer was not asked
    about, an idle engine between batches), over none, or over a step with a prefill chunk, is
    not a step time."""
    clock = Clock()
    rates = MeasuredRates(alpha=1.0, clock=clock)
    step(rates, clock, PLAIN, 1, predicted=1.0, took=2.0)
    step(rates, clock, PLAIN, 1, predicted=1.0, took=30.0, engine_steps=12)   # closes the first: 2
    step(rates, clock, PLAIN, 1, predicted=1.0, took=3.0, engine_steps=0)     # 12 steps: dropped
    step(rates, clock, PLAIN, 1, predicted=1.0, took=3.0, clean=False)        # no step: dropped
    step(rates, clock, PLAIN, 1, predicted=1.0, took=3.0)                     # a prefill: dropped
    rates.start()                                                             # closes a clean step: 3
    assert rates.samples[(PLAIN, 1)] == 2 and rates.corrections[(PLAIN, 1)] == pytest.approx(3.0)
    step(rates, clock, PLAIN, 1, predicted=1.0, took=5.0)
    rates.pause()                                                             # no requests: nothing open
    rates.start()
    assert rates.samples[(PLAIN, 1)] == 2
    rates.record(0.0, PLAIN, 0, 1.0)                                          # no batch: not recorded
    rates.record(0.0, PLAIN, 1, 0.0)                                          # no prediction: not recorded
    rates.observed(True)
    rates.start()
    assert rates.samples[(PLAIN, 1)] == 2


def test_bad_settings_are_named() -> None:
    with pytest.raises(ValueError, match="alpha"):
        MeasuredRates(alpha=0.0)
