# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""FlushCosts: what the flush of buffered features costs a probe, timed while serving.

While drafting is paused with the target features kept, they are buffered (`PendingContext`)
and the round that resumes drafting first projects them into the drafter's context
(`ContextFeed.flush`), then drafts. The pause after a losing round is sized so that its probes
lose at most `DraftCosts.probe_share` of the time (2% by default; `DraftCosts.probe_pause`), with the probe's overhead
modelled at 2.5-6 plain steps (`probe_overhead`, from sessions 15 and 23). On the H200 in
session 36 (BENCHMARKS.md) rounds with a flush took 4.3-8.3 ms at 4-8 requests, against
3.3-3.6 ms without one and ~1.1 ms for a plain step, and 10-31 ms with more than 512
(request, step) pairs buffered: probes at a losing load then cost ~3% of the time.

With `pre_flush` (the engine's default since session 62) most flushes run at a quiet stretch's
last step instead, untimed here: the spans with a flush then come from the resumed rounds that
still flush (after no counted-down stretch), and `extra` / `per_pair` may stay None.

So every drafted round is timed on the host from just before its flush (if any) to its draft
tokens on the host (which waits for the flush's and the drafter's device work), and kept per
batch bucket (powers of two) and kind (with a flush or without). A flush's cost at a bucket is
the median of its last `WINDOW` spans with a flush minus the median without (at that bucket, or
the largest smaller bucket that has one: drafting costs no more there, so the cost errs high;
none: the whole span). A flush grows with the (request, step) pairs buffered, that is with the
pause before it, so the pause policy counts at most one round's time of it (`_probe_overhead`):
priced whole, each longer pause would make the next flush dearer and the pause longer still, up to
`LONGEST_PROBE_PAUSE` (session 36's review).

What keeping the features costs per paused step is that growth: `per_pair` is the seconds a flush
adds per buffered (request, step) pair, the Theil-Sen slope (the median of the pairwise slopes;
Sen 1968, "Estimates of the regression coefficient based on Kendall's tau") of the flushes' extra
seconds over their pairs, across buckets: a flush's fixed part (its tensor ops, a sync) is not
counted. The process's first flush is left out of the fit (cold: 27-69 ms on the H200, session
38; with few flushes it would set the median slope), and the slope is capped at the median ratio
of extra seconds to pairs (an upper bound: it includes the fixed part); a window whose pair counts
do not differ keeps the last slope. On the H200 (session 40) `flush_cost.py` read ~2.3 us a pair
at 32 requests and the engine 3.7 us at 8 (~0.003 plain steps a pair). Device-free.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import deque
from collections.abc import Callable

from deepinfer_dspark.measured_rates import batch_bucket

WINDOW = 5   # spans kept per bucket and kind (their median is read)
SLOPE_FLUSHES = 16   # the last flushes (all buckets) whose pairs `per_pair` fits


class FlushCosts:
    """Per batch bucket, the host seconds a drafted round spends from before its flush to its
    drafts, with and without a flush.

    Args:
        clock: seconds, monotonic (tests pass a fake).
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self._spans: dict[tuple[bool, int], deque[float]] = {}
        self._flushes: deque[tuple[int, float, int]] = deque(maxlen=SLOPE_FLUSHES)   # (bucket, span, pairs)
        self._slope: float | None = None
        self._fitted = True   # `_slope` is up to date
        self._cold = True     # the next flush is the process's first (left out of the fit)

    def add(self, batch: int, began: float, flushed: bool, pairs: int = 0) -> None:
        """A drafted round of `batch` requests whose span began at `began` (`clock()`) ended now;
        `flushed`: it projected buffered features first, `pairs` (request, step) pairs of them
        (`PendingContext.pairs`; 0: not known)."""
        self.record(batch, self.clock() - began, flushed, pairs)

    def record(self, batch: int, span: float, flushed: bool, pairs: int = 0) -> None:
        """`add` with the span in seconds given (a simulated clock)."""
        if batch > 0 and math.isfinite(span) and span >= 0:   # (a clock that went back: no sample)
            bucket = batch_bucket(batch)
            self._spans.setdefault((flushed, bucket), deque(maxlen=WINDOW)).append(span)
            if flushed and pairs > 0 and math.isfinite(pairs):
                if self._cold:
                    self._cold = False
                else:
                    self._flushes.append((bucket, span, pairs))
            self._fitted = False

    def extra(self, batch: int) -> float | None:
        """Seconds a flush adds to a round at `batch`'s bucket (>= 0), or None before a round with a
        flush has been timed there."""
        bucket = batch_bucket(batch)
        flushed = self._spans.get((True, bucket))
        if not flushed:
            return None
        return max(statistics.median(flushed) - self._plain(bucket), 0.0)

    def per_pair(self) -> float | None:
        """Seconds a flush adds per buffered (request, step) pair (>= 0; see the module docstring),
        or None before two flushes of different pair counts (the process's first left out) have
        been timed among the last `SLOPE_FLUSHES`; at most the median extra seconds per pair. Each
        flush's extra seconds are its span minus the median round without a flush at its bucket
        (as `extra`)."""
        if not self._fitted:
            points = [(pairs, span - self._plain(bucket)) for bucket, span, pairs in self._flushes]
            slopes = [(y2 - y1) / (x2 - x1) for i, (x1, y1) in enumerate(points)
                      for x2, y2 in points[i + 1:] if x2 != x1]
            if slopes:   # (none: the pair counts do not differ; the last slope is kept)
                ratio = statistics.median(max(y, 0.0) / x for x, y in points)
                self._slope = min(max(statistics.median(slopes), 0.0), ratio)
            self._fitted = True
        return self._slope

    def _plain(self, bucket: int) -> float:
        """The median span without a flush at `bucket`, or the largest smaller bucket with one
        (drafting costs no more there, so a flush's cost errs high); 0.0 without any."""
        while bucket >= 1 and not self._spans.get((False, bucket)):
            bucket //= 2
        plain = self._spans.get((False, bucket))
        return statistics.median(plain) if plain else 0.0
