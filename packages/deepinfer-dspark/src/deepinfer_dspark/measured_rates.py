# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""MeasuredRates: the SPS profiles corrected by the step times measured while serving.

Confidence scheduling compares a drafted round with a plain decode step through two offline
profiles (`SPSProfile`: speculative rounds and plain steps). Measured on synthetic batches, they
can be off by different amounts under real traffic: on the H200 with SmolLM2-135M and chat
prompts, real plain steps at 64 requests took 1.4x the profile's time and real drafted rounds
1.8x (`packages/deepinfer-dspark/BENCHMARKS.md`, session 8), which turned a losing round into a
predicted win. So the proposer times engine steps: the wall time from one call of the proposer to
the next is one engine step (a drafted round, or a plain step while paused), including the host
work around it. Per batch-size bucket (powers of two) and kind, an exponential moving average
keeps measured / predicted seconds; `ratio(B)` = (round correction) / (plain correction)
multiplies the plain side of every comparison (equivalently, divides the drafted side). Only the
ratio matters (both sides of a comparison are rates at one batch size). A kind not yet measured
at a bucket counts as its profile (correction 1).

Which intervals count: exactly one engine step must lie between the two calls, and it must be a
clean one (`observed`: no prefill chunk; the proposer sees every step's committed rows). An
interval that spans several steps (prefill-only steps the proposer was not asked about, an idle
engine between batches) or a prefill is dropped. Each sample is clipped to [1/4, 4] times the
current estimate before it enters the average, so one outlier (a CUDA graph captured during the
round, a page fault) moves the estimate by at most `alpha` x 3, while a lasting change still
takes over within a few samples.

Decisions built on it depend on earlier steps' times only, never on the drafts they govern, so
verification stays lossless (the paper's stale-decision argument).

Opt-in (`measure_step_times`), not yet measured on a GPU, with known limits found by review on a
simulated engine (fake clocks):
- with asynchronous scheduling the proposer's calls do not line up with device steps at a switch
  between pausing and drafting (one interval covers two steps, the next almost none), which can
  bias the plain-step correction enough to keep drafting when it loses;
- while drafting, plain steps are not timed, so a plain-step correction that is too high (one
  slow spell) keeps drafting on; the re-timing probe covers only the other direction, moves the
  estimate by `alpha` per probe, and its counter is shared by all batch buckets;
- a prefill chunk of at most 1 + k tokens counts as a clean step.
Left to do: drop the intervals next to a switch, time a few plain steps while drafting, keep the
probe counter per bucket.
"""

from __future__ import annotations

import time
from collections.abc import Callable

SPEC, PLAIN = "spec", "plain"
CLIP = 4.0


def batch_bucket(batch: int) -> int:
    """The power of two >= `batch` (1 for 0 or 1)."""
    return 1 << max(batch - 1, 0).bit_length()


class MeasuredRates:
    """Per bucket and kind, an EMA of measured over predicted step seconds.

    Args:
        alpha: weight of a new sample in the moving average, in (0, 1].
        clock: seconds, monotonic (tests pass a fake).

    Raises:
        ValueError: `alpha` outside (0, 1] (named).
    """

    def __init__(self, alpha: float = 0.2, clock: Callable[[], float] = time.perf_counter) -> None:
        if not 0 < alpha <= 1:
            raise ValueError(f"alpha: must be in (0, 1], got {alpha}")
        self.alpha, self.clock = alpha, clock
        self.corrections: dict[tuple[str, int], float] = {}
        self.samples: dict[tuple[str, int], int] = {}
        self._open: tuple[float, str, int, float] | None = None   # (start, kind, bucket, predicted s)
        self._steps = 0        # engine steps observed since the open step started
        self._clean = True     # ... and whether all of them were free of prefill

    def observed(self, clean: bool) -> None:
        """One engine step finished (the proposer was shown its committed rows); `clean`: it
        carried no prefill chunk."""
        self._steps += 1
        self._clean = self._clean and clean

    def start(self) -> float:
        """Called as the proposer is asked about a step: closes the previous step (its time is
        the time since it started, kept when exactly one clean engine step ran in between) and
        returns the current time, the start of this step."""
        now = self.clock()
        if self._open is not None and self._steps == 1 and self._clean:
            began, kind, bucket, predicted = self._open
            ratio = (now - began) / predicted
            if ratio > 0:
                key = (kind, bucket)
                old = self.corrections.get(key, 1.0)
                ratio = min(max(ratio, old / CLIP), old * CLIP)
                self.corrections[key] = old + self.alpha * (ratio - old)
                self.samples[key] = self.samples.get(key, 0) + 1
        self._open = None
        self._steps, self._clean = 0, True
        return now

    def record(self, began: float, kind: str, batch: int, predicted_seconds: float) -> None:
        """Declares the step that started at `began` (`start`'s value): its kind (`SPEC` or
        `PLAIN`), its batch size in requests and the seconds the profile predicts for it."""
        if predicted_seconds > 0 and batch > 0:
            self._open = (began, kind, batch_bucket(batch), predicted_seconds)

    def pause(self) -> None:
        """Forgets the open step (the engine stops stepping, e.g. no requests)."""
        self._open = None

    def ratio(self, batch: int) -> float:
        """Round correction over plain-step correction at `batch`'s bucket (an unmeasured kind
        counts 1.0)."""
        bucket = batch_bucket(batch)
        return self.corrections.get((SPEC, bucket), 1.0) / self.corrections.get((PLAIN, bucket), 1.0)
