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
clean one (`observed`: no prefill chunk; the proposer sees every step's committed rows), and the
steps before and after it must be of the same kind and batch bucket: with asynchronous scheduling the proposer's
calls do not line up with device steps at a switch between pausing and drafting (the interval
before a drafted round also holds the drain of the step in flight; the one after it, almost only
a launch). An interval over several steps (prefill-only steps the proposer was not asked about,
an idle engine) or with a prefill is dropped. Each kind and bucket keeps its last `WINDOW`
samples and uses their median: once the window holds three, one outlier (a CUDA graph captured
during the round) never moves it, and a lasting change takes over after half the window.

Both kinds must keep being timed, or a stale estimate would stay for good. So a kind with no
sample at a bucket for `max_probe_every` rounds (at least `MIN_PERIOD`) of the other kind gets a
re-timing run there: `RUN` drafted rounds (also when pausing rules drafting out), or `RUN` plain
steps; a run yields `RUN - 2` samples. When the batch keeps changing bucket, runs give no samples:
after `STALE_RUNS` such runs the estimate is dropped and the profile decides there again.

With `measure_round_times` (`DSparkProposer`) only the drafted rounds' estimate is read, from
`ROUND_SAMPLES` samples on, each round predicted as the pause policy prices it (rounds it does not
model are `PART`): plain steps are recorded but never consulted, no re-timing run of rounds is
started (with `measure_plain_steps`, plain ones are: below), and
a bucket's round estimate ages toward 1 when read after `max_probe_every` (at least `MIN_PERIOD`)
rounds there without a sample (`relax`: its deviation halved once a period; until session 36 it
was dropped, `forget`), so the features can still be declined while paused (the engine then asks
nothing per step; a dormant or quiet stretch is no sample: `pause`).

With `measure_plain_steps` a third kind, STRETCH, holds plain steps timed over dormant and quiet
stretches (`stretch_asked`, `stretch_ran`; apart from PLAIN's per-step samples): the seconds from
one stretch ask to the last report before the next ask, over the profile's seconds for the steps
reported, with no per-step cost; on the H200 (session 33) the decode profile read 1.11-1.57x the
plain steps' time at 5-32 requests in one benchmark process (the next process's read 1.02 ms at 8
where this one read 1.20), so rounds were priced up to a third too cheap. Unlike the rounds'
estimate it never ages. A bucket that drafts without pausing has no stretch to time, which is
where a decode profile read slow does its harm (it makes the rounds look cheap, so the engine
keeps drafting): since session 47 the proposer then pauses a plain re-timing run there (`RUN`
steps, asked one by one and timed as the rounds are, declared RETIMED while `plain_left` counts
them down, so no other step, e.g. a prompt-lookup round reported as paused, enters their window),
and with `measure_plain_steps` the plain side reads whichever of RETIMED and STRETCH holds
`PLAIN_SAMPLES` samples and was sampled last (`StepTiming._plain_correction`, `fresher`).

Decisions built on it depend on earlier steps' times only, never on the drafts they govern, so
verification stays lossless (the paper's stale-decision argument). `measure_round_times` is on by
default (the factory, since session 36; measured on the H200 in sessions 27-36, `BENCHMARKS.md`),
`measure_step_times` opt-in; both checked on simulated engines (fake clocks, synchronous and
asynchronous call orders). Known limits (review on simulated loops): paused steps are counted at the
whole running batch (`idle_round`), drafted ones at the requests asked for drafts, so with
requests that are never asked (penalties, structured output) the two land in different buckets
and the plain re-timing runs more often than needed (drafting share 0.94 instead of 1.0 in one
case); with asynchronous scheduling, a late ask that then decides not to draft can keep a sample
that is not a step time (the median absorbs single ones).
"""

from __future__ import annotations

import functools
import statistics
import time
from collections import deque
from collections.abc import Callable

SPEC, PLAIN = "spec", "plain"
STRETCH = "stretch"   # plain steps timed over stretches (`measure_plain_steps`), apart from PLAIN's
PART = "part"   # a drafted round its prediction does not model (`measure_round_times`): breaks runs, never read
RETIMED = "retimed"   # plain steps of a plain re-timing run (`measure_plain_steps`, `plain_left`), apart from PLAIN's
ROUND_SAMPLES = 3   # samples before `measure_round_times` reads a bucket's estimate (one outlier never decides)
WINDOW = 5      # samples kept per kind and bucket (their median is the estimate)
RUN = 4         # rounds of a re-timing run (RUN - 2 samples: the first and last are switches)
MIN_PERIOD = 8 * RUN   # rounds between re-timing runs at least (their cost stays <= 1 / 8)
STALE_RUNS = 2  # runs without a sample after which an estimate is dropped


@functools.cache   # several calls a round (`DSparkProposer._correction`)
def batch_bucket(batch: int) -> int:
    """The power of two >= `batch` (1 for 0 or 1)."""
    return 1 << max(batch - 1, 0).bit_length()


class MeasuredRates:
    """Per bucket and kind, the median of the last `WINDOW` measured / predicted step times, and
    the counters that schedule re-timing runs.

    Args:
        clock: seconds, monotonic (tests pass a fake).

    Attributes:
        samples: samples taken per (kind, bucket).
        run_left: rounds left in the current re-timing run of rounds (`started(SPEC)`).
        plain_left: rounds left in the current plain re-timing run (`started(RETIMED)`,
            `measure_plain_steps`: its steps are asked one by one and declared RETIMED).
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.windows: dict[tuple[str, int], deque[float]] = {}
        self._medians: dict[tuple[str, int], float] = {}   # each window's median (read every round)
        self._age: dict[tuple[str, int], int] = {}   # periods without a sample since the last (`relax`)
        self._stamp: dict[tuple[str, int], int] = {}   # the order of each key's last sample (`fresher`)
        self._seq = 0
        self.samples: dict[tuple[str, int], int] = {}
        self.run_left = 0
        self.plain_left = 0
        self._since: dict[tuple[str, int], int] = {}   # (kind, bucket) -> rounds of the other kind since
        self._fruitless: dict[tuple[str, int], int] = {}   # (kind, bucket) -> runs started since its last sample
        Step = tuple[str, int]   # (kind, bucket)
        self._open: tuple[float, str, int, float, Step | None] | None = None   # start, kind, bucket, predicted, step before
        self._closed: tuple[str, int, float, Step | None] | None = None        # a sample waiting for the next step
        self._last: Step | None = None
        self._steps = 0        # engine steps observed since the open step started
        self._clean = True     # ... and whether all of them were free of prefill
        self._stretch: list | None = None   # [asked, bucket, predicted s, clean, last report]
        self._after_start = True   # no stretch step reported since a step was asked about (`start`)
        self._reported = 0         # requests at the last stretch report

    def observed(self, clean: bool) -> None:
        """One engine step finished (the proposer was shown its committed rows); `clean`: it
        carried no prefill chunk (nor is then the stretch running, a quiet one, a sample)."""
        if not clean and self._stretch is not None:
            self._stretch[3] = False
        self._steps += 1
        self._clean = self._clean and clean

    def start(self) -> float:
        """Called as the proposer is asked about a step: closes the previous step and returns the
        current time, the start of this step. The step closed before it becomes a sample if its
        neighbours were of its kind; the one closing now waits for its next neighbour."""
        now = self.clock()
        if self._open is not None:
            began, kind, bucket, predicted, before = self._open
            self._sample_closed(kind, bucket)
            one_clean_step = self._steps == 1 and self._clean
            self._closed = (kind, bucket, (now - began) / predicted, before) if one_clean_step else None
            self._last = (kind, bucket)
        self._open = None
        self._steps, self._clean = 0, True
        self._stretch = None   # (a step asked about: the steps since the last stretch ask were not all a stretch's)
        self._after_start = True
        return now

    def stretch_asked(self, batch: int) -> None:
        """The engine asks for a dormant or quiet stretch before a step at `batch` requests
        (`measure_plain_steps`). The steps reported since the previous ask (`stretch_ran`) are
        one sample of STRETCH: the seconds from that ask to the last report over the seconds the
        profile predicts for them. A stretch is reported before the next ask
        (`DormantSteps.settle`) or right after its last step (`ran`), so the interval holds
        exactly the steps reported, not an idle engine after them. No sample when: a step was
        asked about in between (`start`); the steps left the ask's bucket or the batch ended
        (a report at 0 requests); a quiet step carried a prefill chunk (`observed`); the ask
        came right after a step asked about (with asynchronous scheduling the device may then
        be idle, so the interval misses a step); or the ask found more requests than the last
        report (a request joined: its prefill runs in the stretch's first step). A prefill
        chunked over several steps of a dormant stretch at a constant count is not seen."""
        now = self.clock()
        clean = not self._after_start and batch <= self._reported
        pending, self._stretch = self._stretch, [now, batch_bucket(batch), 0.0, clean, now] if batch > 0 else None
        if pending is None:
            return
        began, bucket, predicted, clean_before, reported = pending
        if clean_before and predicted > 0 and reported > began:
            self.add(STRETCH, bucket, (reported - began) / predicted)

    def stretch_ran(self, batch: int, predicted_seconds: float) -> None:
        """Steps of a stretch have run at `batch` requests, which the profile puts at
        `predicted_seconds` in all (0 requests: the batch ended in the stretch's last step, which
        the report does not price, so the sample is dropped)."""
        self._after_start, self._reported = False, batch
        if self._stretch is not None:
            self._stretch[2] += predicted_seconds
            self._stretch[3] = self._stretch[3] and batch > 0 and batch_bucket(batch) == self._stretch[1]
            self._stretch[4] = self.clock()

    def add(self, kind: str, batch: int, ratio: float) -> None:
        """One measured / predicted sample of `kind` at `batch`'s bucket, taken outside `start`'s
        step intervals (a timed stretch)."""
        if ratio > 0 and batch > 0:
            self._append((kind, batch_bucket(batch)), ratio)
            if kind == STRETCH:   # plain steps timed there: no plain re-timing run is due (`due`)
                self._since[(RETIMED, batch_bucket(batch))] = 0

    def _append(self, key: tuple[str, int], ratio: float) -> None:
        """One sample into `key`'s window. After `relax` the samples kept are replaced by their aged
        values first (as `correction` read them), so the estimate moves on from where it was read,
        never back to the bare profile while the window refills (session 36's review: clearing
        the window read 1.0 until `ROUND_SAMPLES` fresh samples came)."""
        window = self.windows.setdefault(key, deque(maxlen=WINDOW))
        age = self._age.pop(key, 0)
        if age:
            scale = float(1 << min(age, 60))
            window = self.windows[key] = deque((1.0 + (v - 1.0) / scale for v in window), maxlen=WINDOW)
        window.append(ratio)
        self._medians[key] = statistics.median(window)
        self.samples[key] = self.samples.get(key, 0) + 1
        self._seq += 1
        self._stamp[key] = self._seq

    def fresher(self, kinds: tuple[str, ...], batch: int, least: int) -> str | None:
        """Of `kinds`, the one at `batch`'s bucket whose window holds `least` samples and whose
        last sample came last (None when none holds that many)."""
        bucket = batch_bucket(batch)
        full = [k for k in kinds if len(self.windows.get((k, bucket), ())) >= least]
        return max(full, key=lambda k: self._stamp[(k, bucket)], default=None)

    def record(self, began: float, kind: str, batch: int, predicted_seconds: float) -> None:
        """Declares (or re-declares: the last call wins) the step that started at `began`
        (`start`'s value): its kind (`SPEC`, `PART`, `PLAIN` or `RETIMED`), its batch size in requests and the
        seconds the profile predicts for it."""
        if predicted_seconds > 0 and batch > 0:
            self._open = (began, kind, batch_bucket(batch), predicted_seconds, self._last)

    def pause(self) -> None:
        """Forgets the open step (the engine stops stepping, e.g. no requests)."""
        self._open, self._closed, self._last = None, None, None

    def skip(self) -> None:
        """`start` for a step whose time no pricing reads (`StepTiming._timing_read`), without
        the clock: the step before the open one becomes a sample as `start` would take it, then
        the open step is forgotten (`pause`: it had this step for neighbour, so it gives none),
        and this step is declared nothing."""
        if self._open is not None:
            self._sample_closed(self._open[1], self._open[2])
        self._steps, self._clean = 0, True
        self._stretch, self._after_start = None, True
        self.pause()

    def _sample_closed(self, kind: str, bucket: int) -> None:
        """The step waiting for its next neighbour (`_closed`) becomes a sample when the step
        before it and the one after it (the open step closing: `kind` at `bucket`) were of its
        kind and bucket."""
        if self._closed is not None:
            last_kind, last_bucket, ratio, last_before = self._closed
            if last_before == (last_kind, last_bucket) == (kind, bucket) and ratio > 0:
                self._append((last_kind, last_bucket), ratio)
                self._since[(last_kind, last_bucket)] = 0
                self._fruitless[(last_kind, last_bucket)] = 0

    @property
    def corrections(self) -> dict[tuple[str, int], float]:
        """The current estimate of every measured (kind, bucket)."""
        return {key: statistics.median(window) for key, window in self.windows.items()}

    def correction(self, kind: str, batch: int, least: int = 1) -> float:
        """Median measured / predicted time of `kind` at `batch`'s bucket (1.0 with fewer than
        `least` samples in its window)."""
        key = (kind, batch_bucket(batch))
        window = self.windows.get(key)
        if not window or len(window) < least:
            return 1.0
        age = self._age.get(key, 0)
        return self._medians[key] if not age else 1.0 + (self._medians[key] - 1.0) / (1 << min(age, 60))

    def ratio(self, batch: int) -> float:
        """Round correction over plain-step correction at `batch`'s bucket."""
        return self.correction(SPEC, batch) / self.correction(PLAIN, batch)

    def count(self, kind: str, batch: int, rounds: int = 1) -> None:
        """Counts `rounds` rounds of `kind` at `batch` for the re-timing runs (and rounds of a
        run): the other kind's counter at that bucket grows (a drafted round's: PLAIN's and
        RETIMED's); it restarts when a sample of that
        kind is taken there or a run of it starts (`started`), not on a lone round, which is no
        sample."""
        bucket = batch_bucket(batch)
        for other in ((PLAIN, RETIMED) if kind == SPEC else (SPEC,)):
            self._since[(other, bucket)] = self._since.get((other, bucket), 0) + rounds
        self.run_left = max(0, self.run_left - rounds)
        self.plain_left = max(0, self.plain_left - rounds)

    def forget(self, kind: str, batch: int) -> None:
        """Drops the estimate of `kind` at `batch`'s bucket (the profile decides there again)."""
        self.windows.pop((kind, batch_bucket(batch)), None)
        self._medians.pop((kind, batch_bucket(batch)), None)
        self._age.pop((kind, batch_bucket(batch)), None)

    def relax(self, kind: str, batch: int, every: int) -> None:
        """Halves the deviation from 1 of the estimate of `kind` at `batch`'s bucket once for each
        `every` rounds counted there since its last sample (at least once; a dormant or quiet
        stretch reports many at a time) and restarts that count: an estimate without fresh samples
        ages toward its profile (correction 1) instead of being dropped at once (`forget`), so a
        bucket whose rounds were timed slow is not judged on the bare profile at its next lone
        probe (on the H200 in session 36 such probes at 8 requests, each judged anew, lost ~3% of
        the time). The samples kept are untouched until the next one (`_append`)."""
        key = (kind, batch_bucket(batch))
        if self.windows.get(key):   # read as 1 + (median - 1) / 2^age (`correction`)
            self._age[key] = self._age.get(key, 0) + max(self._since.get(key, 0) // max(every, 1), 1)
        self._since[key] = 0

    def due(self, kind: str, batch: int, every: int) -> bool:
        """Whether `kind` has had no sample and no run at `batch`'s bucket for `every` rounds of
        the other kind (a re-timing run of `kind` is due there)."""
        return self._since.get((kind, batch_bucket(batch)), 0) >= every

    def started(self, kind: str, batch: int) -> None:
        """A re-timing run of `kind` starts at `batch` (SPEC runs count down `run_left`, RETIMED
        ones `plain_left`; PLAIN ones, `measure_step_times`', are the pause that holds them). When
        the last runs there gave no sample (the batch keeps changing bucket), the estimate is
        stale: it is dropped, and the profile (correction 1) decides there until a sample comes."""
        key = (kind, batch_bucket(batch))
        self._since[key] = 0
        self._fruitless[key] = self._fruitless.get(key, 0) + 1
        if self._fruitless[key] > STALE_RUNS:
            self.windows.pop(key, None)
            self._medians.pop(key, None)
            self._age.pop(key, None)
        if kind == SPEC:
            self.run_left = RUN
        elif kind == RETIMED:
            self.plain_left = RUN
