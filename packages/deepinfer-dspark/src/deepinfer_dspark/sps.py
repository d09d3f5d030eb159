# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""SPSProfile: engine steps per second as a function of the step's batch token count.

The load-aware prefix scheduler (DSpark, Cheng et al. 2026, Algorithm 1) maximises expected
emitted tokens times SPS(B), where B is the number of tokens the target model processes in
the step. The table is measured once on the target hardware (`measure`) and stored as JSON.
"""

from __future__ import annotations

import bisect
import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

_FORMAT = "deepinfer-sps-profile"
MIN_RATE = 1e-3   # steps per second: a step of at most 1,000 s
MAX_RATE = 1e9    # a step of at least 1 ns


class SPSProfile:
    """A measured (batch tokens -> steps per second) table with interpolation.

    Between measured sizes the step TIME (1 / SPS) is interpolated linearly; below the
    smallest size it is the smallest size's time; above the largest it is extrapolated from
    the last two points (never below the last measured time), so a saturated engine keeps
    getting slower as B grows.

    Args:
        batch_tokens: strictly increasing positive ints (below 2**31), the measured batch token counts.
        steps_per_s: one steps-per-second value per size, within [`MIN_RATE`, `MAX_RATE`] (a step
            of 1 ns to 1,000 s: beyond, a rate is a unit error, and its products with the measured
            corrections could underflow to 0 in the pause decisions).
        meta: free-form JSON-serialisable facts (device, model, date), stored with the table.

    Raises:
        ValueError: either list not a sequence of numbers, the table empty, unsorted, of unequal
            lengths, or a rate outside those bounds (names the field).
    """

    def __init__(self, batch_tokens: Sequence[int], steps_per_s: Sequence[float],
                 meta: dict | None = None):
        for name, values in (("batch_tokens", batch_tokens), ("steps_per_s", steps_per_s)):
            if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
                raise ValueError(f"{name}: must be a list, got {type(values).__name__}")
        sizes, values = list(batch_tokens), list(steps_per_s)   # (arrays and tensors too)
        if any(isinstance(s, (bool, str, bytes)) for s in values):
            raise ValueError(f"steps_per_s: must be numbers, got {values[:8]}")
        try:
            rates = [float(s) for s in values]
        except (TypeError, ValueError, OverflowError) as exc:   # e.g. an int too large for a float
            raise ValueError(f"steps_per_s: must be numbers: {exc}") from exc
        if not sizes or len(sizes) != len(rates):
            raise ValueError("batch_tokens: need one or more sizes, one per steps_per_s value")
        if any(isinstance(b, bool) or not isinstance(b, int) or not 0 < b < 2**31 for b in sizes) or \
                any(b1 <= b0 for b0, b1 in zip(sizes, sizes[1:])):
            raise ValueError(f"batch_tokens: must be strictly increasing positive ints below 2**31, got {sizes[:8]}")
        if any(not MIN_RATE <= s <= MAX_RATE for s in rates):   # (NaN fails too)
            raise ValueError(f"steps_per_s: must be within [{MIN_RATE:g}, {MAX_RATE:g}] steps per second, "
                             f"got {rates[:8]}")
        self.batch_tokens = sizes
        self.steps_per_s = rates
        self.meta = dict(meta or {})
        self._sizes = torch.tensor(sizes, dtype=torch.float64)
        self._times = 1.0 / torch.tensor(rates, dtype=torch.float64)
        self._time_list = self._times.tolist()
        self._memo: dict[int, float] = {}   # `at` per token count: the table never changes

    def step_time(self, batch_tokens: torch.Tensor | int) -> torch.Tensor:
        """Seconds per engine step at each batch token count.

        Args:
            batch_tokens: int or tensor of token counts (any shape).

        Returns:
            float64 tensor shaped like `batch_tokens`.
        """
        b = torch.as_tensor(batch_tokens, dtype=torch.float64)
        sizes, times = self._sizes, self._times
        if sizes.numel() == 1:
            return times[0].expand_as(b).clone()
        hi = torch.searchsorted(sizes, b, right=True).clamp(1, sizes.numel() - 1)
        x0, x1, t0, t1 = sizes[hi - 1], sizes[hi], times[hi - 1], times[hi]
        w = (b - x0) / (x1 - x0)
        t = t0 * (1 - w) + t1 * w   # exact at the measured points, whatever the two times' scales
        t = torch.where(b > sizes[-1], t.clamp(min=float(times[-1])), t)
        return torch.where(b <= sizes[0], times[0], t)

    def at(self, batch_tokens: int) -> float:
        """Steps per second at one batch token count: `float(self(batch_tokens))` in plain Python
        (the per-round decisions call it ~15 times a round at 1 request; a tensor call costs
        ~10 ops). Memoized per token count."""
        rate = self._memo.get(batch_tokens)
        if rate is None:
            rate = self._memo[batch_tokens] = self._at(batch_tokens)
        return rate

    def _at(self, batch_tokens: int) -> float:
        sizes, times = self.batch_tokens, self._time_list
        if len(sizes) == 1 or batch_tokens <= sizes[0]:
            return 1.0 / times[0]
        hi = min(max(bisect.bisect_right(sizes, batch_tokens), 1), len(sizes) - 1)
        x0, x1, t0, t1 = sizes[hi - 1], sizes[hi], times[hi - 1], times[hi]
        w = (batch_tokens - x0) / (x1 - x0)
        t = t0 * (1 - w) + t1 * w
        return 1.0 / (max(t, times[-1]) if batch_tokens > sizes[-1] else t)

    def __call__(self, batch_tokens: torch.Tensor | int) -> torch.Tensor:
        """Steps per second at each batch token count (float64, shaped like the input)."""
        return 1.0 / self.step_time(batch_tokens)

    def to_dict(self) -> dict:
        return {"format": _FORMAT, "version": 1, "batch_tokens": self.batch_tokens,
                "steps_per_s": self.steps_per_s, "meta": self.meta}

    @classmethod
    def from_dict(cls, data: dict) -> SPSProfile:
        """Inverse of `to_dict`. Raises ValueError on a foreign or malformed document."""
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise ValueError(f"format: expected {_FORMAT!r}")
        if data.get("version") != 1:
            raise ValueError(f"version: unsupported {data.get('version')!r}")
        return cls(data.get("batch_tokens", []), data.get("steps_per_s", []), data.get("meta"))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> SPSProfile:
        return cls.from_dict(json.loads(Path(path).read_text()))


def measure(step_fn: Callable[[int], object], batch_token_sizes: Sequence[int], repeats: int = 5,
            warmup: int = 1, clock: Callable[[], float] = time.perf_counter,
            meta: dict | None = None) -> SPSProfile:
    """Times `step_fn(B)` for each size and returns the profile (median of `repeats` runs).

    Args:
        step_fn: runs one engine step of B batch tokens and returns when it has finished
            (it must synchronise the device itself, e.g. `torch.cuda.synchronize()`).
        batch_token_sizes: strictly increasing positive ints.
        repeats: timed runs per size (>= 1); the median time is kept.
        warmup: untimed runs per size before timing (>= 0).
        clock: seconds as a float (monotonic).
        meta: stored in the profile.

    Returns:
        SPSProfile with steps_per_s = 1 / median seconds per step.

    Raises:
        ValueError: bad sizes, `repeats` < 1, `warmup` < 0, or a non-positive measured time.
    """
    if repeats < 1:
        raise ValueError(f"repeats: must be >= 1, got {repeats}")
    if warmup < 0:
        raise ValueError(f"warmup: must be >= 0, got {warmup}")
    sizes = list(batch_token_sizes)
    SPSProfile(sizes, [1.0] * len(sizes))  # validates the sizes before any work
    rates = []
    for b in sizes:
        for _ in range(warmup):
            step_fn(b)
        times = []
        for _ in range(repeats):
            start = clock()
            step_fn(b)
            times.append(clock() - start)
        median = statistics.median(times)
        if median <= 0:
            raise ValueError(f"step_fn: measured a non-positive step time at batch_tokens={b}")
        rates.append(1.0 / median)
    return SPSProfile(sizes, rates, meta)
