# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""DrainedBatches: whether drafting paid in the batches the engine drained, as a whole.

The pause policy judges each drafted round by its expected tokens over its price. In a batch the
engine drains (`LLM.generate`: every request given at once, none waiting), the call ends with its
last reply, and what drafting cost the call also holds what no round's price does: the runs'
transitions, the target features kept for the drafter while paused, their flushes on resuming,
the last request drafting alone, the batch's requests falling out of step. On an H100 at 8
requests (session 64, `benchmarks/drafted_calls.py`) every traced call of the default that drafted
ran below plain decoding's call of the same prompts (11 calls, 0.742-0.958, geometric mean 0.871)
while its rounds were judged at ~1.0, and the calls that drafted nothing ran at 1.001.

This measures drained batches directly. A batch is the requests tracked from one that finds none
held; it counts when the engine said it drains them before any finished and kept draining to the
end, no request joined since, and it held at least two; its size is the requests it held (running,
or waiting for one of the engine's `slots`). Its time is the clock from that `draining(True)` to its
last request's removal, and its plain time is plain decoding's prediction for its own requests: each
runs its output length, the first `slots` at once and each next one as a slot frees, a step at b
running costing `plain_seconds(b)` (prefill left out). Its ratio, predicted over taken, is filed as
drafted (the proposer drafted a round in it; DSpark's rounds count, a batch where only prompt lookup
drafted counts as undrafted) or not, per size bucket (`ledger_bucket`). Once `MIN_BATCHES` drafted
batches of the last `WINDOW` are filed, drafting's gain is their geometric mean ratio over the
undrafted ones' (which calibrate the prediction: prefill, the host's per-call work), or over
`UNCALIBRATED` until `MIN_BATCHES` undrafted batches are filed (a load where the policy drafts every
batch is never run plain to calibrate: in the simulator that cost 2 requests 6-13 points where
drafting won). Below 1 the bucket is ruled out for the next batches of that size (`rules_out`),
`BACKOFF` of them at first, and the drafted window is emptied: the next batch that drafts there (the
pause policy decides again) is judged on its own, a loss doubling the rule-out (up to
`MAX_BACKOFF`), a win ending the backoff. Ruled out, the proposer treats every load of the batch as
a bound rules out (`PausePolicy.expected_loss`: paused, the features declined), its last request
included, and lifts those pauses when the batch ends (`PausePolicy._lift_drained`).

Opt-in (`speculative_config.drained_batches`); device-free: the caller passes the clock.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Sequence

from deepinfer_dspark.batch_tail import known_tokens
from deepinfer_dspark.pause_ledger import ledger_bucket

MIN_BATCHES = 3    # drafted and undrafted batches a bucket needs before it is judged
WINDOW = 8         # the last batches of each kind a bucket keeps
BACKOFF = 4        # batches a losing verdict rules out at first ...
MAX_BACKOFF = 64   # ... doubling while the probes after each keep losing, up to this many
UNCALIBRATED = 0.95   # plain decoding's predicted / taken time assumed until `MIN_BATCHES` undrafted batches
# measure it: the prediction leaves out prefill and the host's per-call work (H100, session 64: a call at 8
# requests ~150 ms, its prefill step 1-2 ms, the step sums 7-10 ms below the call's time)


class DrainedBatches:
    """Drained batches' realized speed, drafted against undrafted, per size bucket.

    Args:
        plain_seconds: seconds of a plain decode step at b running requests (1 <= b <= `slots`).
        slots: requests the engine runs at once (`max_num_seqs`): a batch holding more runs them
            as slots free up, first come first served, in the prediction too.
    """

    def __init__(self, plain_seconds: Callable[[int], float], slots: int) -> None:
        if slots < 1:
            raise ValueError(f"slots: must be >= 1, got {slots}")
        self._plain, self._slots = plain_seconds, slots
        self._views: dict[str, tuple[Sequence[int], int]] = {}   # id -> (live token list, prompt tokens)
        self._lengths: dict[str, int] = {}   # output lengths of the batch's requests, in arrival order
        self._began = 0.0                  # the clock when the batch began draining
        self._drafted_at_start = 0         # the proposer's drafted rounds when the batch began
        self._clean = False                # draining since before any request finished, nobody joined since
        self._spoiled = False              # joined while it drained, or it stopped draining midway
        self._ratios: dict[int, tuple[deque, deque]] = {}   # bucket -> (drafted, undrafted) ratios
        self._skip: dict[int, int] = {}    # bucket -> batches still ruled out
        self._backoff: dict[int, int] = {}   # bucket -> the next rule-out's batches (once ruled out)
        self.verdicts: dict[int, float] = {}   # bucket -> the last gain judged (read by benchmarks)
        self.held: set[int] = set()   # ledger buckets the caller paused while the batch was ruled out (`finish`)

    def draining(self, flag: bool, now: float) -> None:
        """The engine drains what it holds (True, after the batch's requests were tracked) or may be
        given more (False); `now`: the clock in seconds. A batch counts from its draining (True
        before any of its requests finished) to its last request's removal, if it drains throughout."""
        if not flag:
            self._spoiled = self._spoiled or (self._clean and bool(self._views))
            self._clean = False
        elif self._views and not self._finished and not self._clean and not self._spoiled:
            self._clean, self._began = True, now

    @property
    def _finished(self) -> int:
        return len(self._lengths) - len(self._views)

    def track(self, request_id: str, token_ids: Sequence[int], drafted_rounds: int) -> None:
        """A request joins (its live token list, the proposer's drafted rounds so far); the first
        while none is held starts a batch, one joining a counted batch spoils it."""
        if not self._views:
            self._lengths, self._drafted_at_start, self._spoiled = {}, drafted_rounds, False
        elif self._clean:   # joined a batch already draining (a freed slot refilled, a closed loop)
            self._clean, self._spoiled = False, True
        self._views[request_id] = (token_ids, len(token_ids))
        self._lengths[request_id] = 0

    def finish(self, request_id: str, drafted_rounds: int, now: float) -> bool:
        """A request left (ignored if unknown); the batch's last one files the batch. Returns
        whether a batch ruled out (`rules_out`) just ended, or one for which the caller paused
        buckets (`held`, also if it stopped draining before its end): the caller lifts them."""
        entry = self._views.pop(request_id, None)
        if entry is None:
            return False
        view, prompt = entry
        self._lengths[request_id] = max(known_tokens(view) - prompt, 0)
        if self._views:
            return False
        clean, self._clean = self._clean, False   # (the next batch counts from its own `draining(True)`)
        size, bucket = len(self._lengths), ledger_bucket(len(self._lengths))
        ruled = clean and self._skip.get(bucket, 0) > 0
        predicted = self._predicted(list(self._lengths.values()))
        if not clean or size < 2 or now <= self._began or predicted <= 0:
            return ruled or bool(self.held)   # (a batch that stopped draining may have paused some)
        drafted = drafted_rounds > self._drafted_at_start
        kinds = self._ratios.setdefault(bucket, (deque(maxlen=WINDOW), deque(maxlen=WINDOW)))
        kinds[0 if drafted else 1].append(predicted / (now - self._began))
        if ruled:
            self._skip[bucket] -= 1
        elif drafted:
            self._judge(bucket)
        return ruled or bool(self.held)

    def rules_out(self) -> bool:
        """Whether the batch running now is of a size whose drafted batches lost (against the
        undrafted ones, or `UNCALIBRATED`; see the module docstring); False outside a clean
        drained batch."""
        return self._clean and bool(self._views) and self._skip.get(ledger_bucket(len(self._lengths)), 0) > 0

    def _judge(self, bucket: int) -> None:
        """After a drafted batch at `bucket`: the drafted window's gain over plain decoding's, the
        bucket ruled out if below 1. A rule-out empties the drafted window, so the probe after it is
        judged on its own (and `MIN_BATCHES` does not wait for it): a loss doubles the next
        rule-out, a win ends the backoff."""
        drafted, undrafted = self._ratios[bucket]
        if len(drafted) < MIN_BATCHES and bucket not in self._backoff:
            return
        plain = _geomean(undrafted) if len(undrafted) >= MIN_BATCHES else UNCALIBRATED
        gain = _geomean(drafted) / plain
        self.verdicts[bucket] = gain
        if gain >= 1.0:
            self._backoff.pop(bucket, None)
            return
        rounds = self._backoff.get(bucket, BACKOFF)
        self._skip[bucket] = rounds
        self._backoff[bucket] = min(2 * rounds, MAX_BACKOFF)
        drafted.clear()

    def _predicted(self, lengths: list[int]) -> float:
        """Plain decoding's seconds for requests of these output lengths (arrival order): the first
        `slots` start at once, each next one as a slot frees, a step at b running costing
        `plain_seconds(b)` (prefill left out)."""
        running = lengths[:self._slots]
        heapq.heapify(running)
        waiting, total, now = iter(lengths[self._slots:]), 0.0, 0
        while running:
            end = running[0]
            if end > now:
                total += (end - now) * self._plain(len(running))
                now = end
            heapq.heappop(running)
            nxt = next(waiting, None)
            if nxt is not None:
                heapq.heappush(running, now + nxt)
        return total


def _geomean(values) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))
