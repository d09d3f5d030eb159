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
held; it counts when the engine said it drains them before any finished and kept draining, no
request joined since, and it held at least two; its size is the requests it held (running or waiting
for a slot). Its time is the clock from that `draining(True)` to its last request's removal, and its
plain time is plain decoding's prediction for its own requests, each running its output length, a
step at b running costing `plain_seconds(b)` (each stretch between two finishes at the requests
left). Its ratio, predicted over taken, is filed as drafted (the proposer drafted a round in it) or
not, per size bucket (`ledger_bucket`; DSpark's rounds count, a batch where only prompt lookup
drafted counts as undrafted). Once `MIN_BATCHES` drafted batches of the last `WINDOW` are filed,
drafting's gain is their geometric mean ratio over the undrafted ones' (which calibrate the
prediction: prefill, the host's per-call work), or over `UNCALIBRATED` until `MIN_BATCHES` undrafted
batches are filed (a load where the policy drafts every batch is never run plain to calibrate: that
would cost it most where drafting wins); below 1 the bucket is ruled out for the next batches of
that size (`rules_out`): `BACKOFF` batches at first, doubling while drafted batches keep losing
there (up to `MAX_BACKOFF`); then the pause policy decides again, and the next batch that drafts is
judged anew (with the window's earlier ones). Ruled out, the proposer treats every load of that
batch as a bound rules out (`PausePolicy.expected_loss`: paused, the features declined), its last
request included.

Opt-in (`speculative_config.drained_batches`); device-free: the caller passes the clock.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence

from deepinfer_dspark.batch_tail import known_tokens
from deepinfer_dspark.pause_ledger import ledger_bucket

MIN_BATCHES = 3    # drafted and undrafted batches a bucket needs before it is judged
WINDOW = 8         # the last batches of each kind a bucket keeps
BACKOFF = 4        # batches a losing verdict rules out at first ...
MAX_BACKOFF = 64   # ... doubling while drafted batches keep losing, up to this many
UNCALIBRATED = 0.95   # plain decoding's predicted / taken time assumed until `MIN_BATCHES` undrafted batches
# measure it: the prediction leaves out prefill and the host's per-call work (H100, session 64: a call at 8
# requests ~150 ms, its prefill step 1-2 ms, the step sums 7-10 ms below the call's time)


class DrainedBatches:
    """Drained batches' realized speed, drafted against undrafted, per size bucket.

    Args:
        plain_seconds: seconds of a plain decode step at b running requests (b >= 1).
    """

    def __init__(self, plain_seconds: Callable[[int], float]) -> None:
        self._plain = plain_seconds
        self._views: dict[str, tuple[Sequence[int], int]] = {}   # id -> (live token list, prompt tokens)
        self._lengths: list[int] = []      # output lengths of the batch's finished requests
        self._began = 0.0                  # the clock when the batch began draining
        self._size = 0                     # requests the batch held
        self._drafted_at_start = 0         # the proposer's drafted rounds when the batch began
        self._clean = False                # draining since before any request finished, nobody joined since
        self._spoiled = False              # a request joined the batch while it drained
        self._ratios: dict[int, tuple[deque, deque]] = {}   # bucket -> (drafted, undrafted) ratios
        self._skip: dict[int, int] = {}    # bucket -> batches still ruled out
        self._backoff: dict[int, int] = {}   # bucket -> the next verdict's batches ruled out
        self.verdicts: dict[int, float] = {}   # bucket -> the last gain judged (read by benchmarks)

    def draining(self, flag: bool, now: float) -> None:
        """The engine drains what it holds (True, after the batch's requests were tracked) or may be
        given more (False); `now`: the clock in seconds. A batch counts from its draining (True
        before any of its requests finished) to its last request's removal, if it drains throughout."""
        if not flag:
            self._clean = False
        elif self._views and not self._lengths and not self._clean and not self._spoiled:
            self._clean, self._began = True, now

    def track(self, request_id: str, token_ids: Sequence[int], drafted_rounds: int) -> None:
        """A request joins (its live token list, the proposer's drafted rounds so far); the first
        while none is held starts a batch, one joining a counted batch spoils it."""
        if not self._views:
            self._size, self._lengths, self._drafted_at_start, self._spoiled = 0, [], drafted_rounds, False
        elif self._clean:   # joined a batch already draining (a freed slot refilled, a closed loop)
            self._clean, self._spoiled = False, True
        self._views[request_id] = (token_ids, len(token_ids))
        self._size += 1

    def finish(self, request_id: str, drafted_rounds: int, now: float) -> None:
        """A request left (ignored if unknown); the batch's last one files the batch."""
        entry = self._views.pop(request_id, None)
        if entry is None:
            return
        view, prompt = entry
        self._lengths.append(max(known_tokens(view) - prompt, 0))
        if self._views:
            return
        clean, self._clean = self._clean, False   # (the next batch counts from its own `draining(True)`)
        if not clean or self._size < 2 or now <= self._began:
            return
        predicted = self._predicted(sorted(self._lengths))
        if predicted <= 0:
            return
        bucket = ledger_bucket(self._size)
        drafted = drafted_rounds > self._drafted_at_start
        kinds = self._ratios.setdefault(bucket, (deque(maxlen=WINDOW), deque(maxlen=WINDOW)))
        kinds[0 if drafted else 1].append(predicted / (now - self._began))
        if self._skip.get(bucket, 0) > 0:
            self._skip[bucket] -= 1
        elif drafted:
            self._judge(bucket)

    def rules_out(self) -> bool:
        """Whether the batch running now is of a size whose drafted batches lost (see the module
        docstring); False outside a clean drained batch."""
        return self._clean and bool(self._views) and self._skip.get(ledger_bucket(self._size), 0) > 0

    def _judge(self, bucket: int) -> None:
        """After a drafted batch at `bucket`: its gain, ruling the bucket out if below 1."""
        drafted, undrafted = self._ratios[bucket]
        if len(drafted) < MIN_BATCHES:
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

    def _predicted(self, lengths: list[int]) -> float:
        """Plain decoding's seconds for requests of these output lengths (ascending), all starting
        at once: after the j-th finishes the rest run at len(lengths) - j requests."""
        total, done, left = 0.0, 0, len(lengths)
        for length in lengths:
            if length > done:
                total += (length - done) * self._plain(left)
            done, left = max(done, length), left - 1
        return total


def _geomean(values) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))
