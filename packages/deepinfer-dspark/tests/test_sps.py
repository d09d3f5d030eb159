# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""SPSProfile interpolation (against numpy.interp), JSON round trip, measure() with a fake clock."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from deepinfer_dspark import SPSProfile, measure

SIZES = [4, 8, 16, 64, 256]
RATES = [100.0, 97.0, 90.0, 60.0, 20.0]


def test_interpolates_step_time_like_numpy():
    profile = SPSProfile(SIZES, RATES)
    b = torch.arange(4, 257)
    expected = 1.0 / np.interp(b.numpy(), SIZES, [1.0 / r for r in RATES])
    np.testing.assert_allclose(profile(b).numpy(), expected, rtol=1e-12)
    assert profile(b).shape == b.shape and profile(b).dtype == torch.float64
    np.testing.assert_allclose(profile(torch.tensor(SIZES)).numpy(), RATES, rtol=1e-12)


def test_outside_the_table():
    profile = SPSProfile(SIZES, RATES)
    assert float(profile(1)) == pytest.approx(RATES[0])  # below: the smallest size's rate
    t64, t256 = 1 / RATES[3], 1 / RATES[4]
    slope = (t256 - t64) / (256 - 64)
    assert float(profile.step_time(512)) == pytest.approx(t256 + slope * 256)  # linear beyond
    # A table whose time falls at the end never extrapolates below the last measured time.
    falling = SPSProfile([1, 2], [1.0, 2.0])
    assert float(falling(10)) == pytest.approx(2.0)
    assert float(SPSProfile([8], [5.0])(torch.tensor([1, 8, 99]))[2]) == pytest.approx(5.0)


def test_json_round_trip(tmp_path):
    profile = SPSProfile(SIZES, RATES, meta={"device": "cpu", "model": "toy"})
    path = tmp_path / "sps.json"
    profile.save(path)
    loaded = SPSProfile.load(path)
    assert loaded.batch_tokens == SIZES and loaded.steps_per_s == RATES and loaded.meta == profile.meta
    with pytest.raises(ValueError, match="format"):
        SPSProfile.from_dict({"batch_tokens": SIZES, "steps_per_s": RATES})


class FakeClock:
    """A clock that only moves when the fake step runs: t(B) = 0.01 + 0.001 * B (+ jitter)."""

    def __init__(self):
        self.now = 0.0
        self.calls: list[int] = []

    def __call__(self) -> float:
        return self.now

    def step(self, batch_tokens: int) -> None:
        jitter = [0.0, 0.5, -0.004, 0.0, 0.0][len(self.calls) % 5]  # one outlier per size
        self.calls.append(batch_tokens)
        self.now += 0.01 + 0.001 * batch_tokens + (jitter if len(self.calls) > 1 else 0.0)


def test_measure_takes_the_median():
    clock = FakeClock()
    profile = measure(clock.step, [2, 32], repeats=5, warmup=0, clock=clock, meta={"device": "fake"})
    assert clock.calls == [2] * 5 + [32] * 5
    assert profile.batch_tokens == [2, 32] and profile.meta == {"device": "fake"}
    assert profile.steps_per_s == pytest.approx([1 / 0.012, 1 / 0.042])


def test_measure_runs_warmup_untimed():
    clock = FakeClock()
    measure(clock.step, [1, 2], repeats=2, warmup=3, clock=clock)
    assert clock.calls == [1] * 5 + [2] * 5


@pytest.mark.parametrize(("sizes", "rates", "field"), [
    ([], [], "batch_tokens"),
    ([4, 4], [1.0, 1.0], "batch_tokens"),
    ([0, 4], [1.0, 1.0], "batch_tokens"),
    ([4, 8], [1.0], "batch_tokens"),
    ([4, 8], [1.0, 0.0], "steps_per_s"),
    ([4, 8], [1.0, float("inf")], "steps_per_s"),
    ([4, 8], [1.0, 1e-310], "steps_per_s"),   # its step time 1 / rate overflows to inf
])
def test_bad_table(sizes, rates, field):
    with pytest.raises(ValueError, match=field):
        SPSProfile(sizes, rates)


def test_bad_measure_arguments():
    with pytest.raises(ValueError, match="repeats"):
        measure(lambda b: None, [1], repeats=0)
    with pytest.raises(ValueError, match="batch_tokens"):
        measure(lambda b: None, [2, 1])
    with pytest.raises(ValueError, match="step_fn"):
        measure(lambda b: None, [1], clock=lambda: 0.0)


def test_scalar_lookup_equals_the_tensor_lookup() -> None:
    """`at` (plain Python, used per round) agrees with the tensor interpolation everywhere:
    below, between, at and above the measured sizes, and for a one-point table."""
    import random

    rng = random.Random(0)
    for _ in range(50):
        sizes = sorted(rng.sample(range(1, 600), rng.randint(1, 6)))
        profile = SPSProfile(sizes, [rng.uniform(1.0, 2000.0) for _ in sizes])
        for b in [1, sizes[0], sizes[-1], sizes[-1] + 1, 4096] + [rng.randint(1, 700) for _ in range(20)]:
            assert profile.at(b) == pytest.approx(float(profile(b)), rel=1e-12), (sizes, b)
