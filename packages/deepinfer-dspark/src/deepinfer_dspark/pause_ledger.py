# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""PauseLedger: when confidence scheduling skips drafting, kept per batch-size bucket.

Whether a drafted round beats a plain decode step depends on the load: on the H200 with
SmolLM2-135M a round pays at 1 request and loses at 8 and above
(`packages/deepinfer-dspark/BENCHMARKS.md`). A single pause counter for the whole engine forgot
that: every time the batch moved to another size it had to be reset (or kept a pause decided at
another load), and each chat batch, whose requests finish one by one, went through all the sizes
again, re-learning with probe rounds that cost up to 6x a plain step. So the ledger keeps, per
power-of-two bucket of the batch size (`batch_bucket`):

- the rounds still to skip there (decremented only by rounds at that bucket);
- the next pause after a loss there (exponential backoff from `probe_every` up to
  `max_probe_every`; a win resets it);
- the smoothed expected gain of drafting there: the mean of each drafted round's expected tokens
  per second over plain decoding's, over the bucket's first 1 / `SMOOTH` rounds, then an
  exponential moving average of weight `SMOOTH`. One round's
  confidences say little about the next round's, so a round predicted to lose right after rounds
  predicted to win does not pause drafting on its own; at a load where every round loses, the
  average stays below 1 and the pauses grow to `max_probe_every`.

Every decision reads earlier rounds only, never the drafts it governs, so verification stays
lossless (the argument of the paper's stale-capacity variant). Device-free.
"""

from __future__ import annotations

from deepinfer_dspark.measured_rates import batch_bucket

SMOOTH = 0.125   # weight of the newest round in the expected-gain average


class PauseLedger:
    """Per-bucket pauses, backoffs and expected gains of drafting.

    Args:
        probe_every: the first pause after a loss at a bucket, in rounds (>= 1).
        max_probe_every: the longest pause (>= probe_every).
    """

    def __init__(self, probe_every: int, max_probe_every: int) -> None:
        self.probe_every = probe_every
        self.max_probe_every = max(max_probe_every, probe_every)
        self._left: dict[int, int] = {}      # bucket -> rounds still to skip
        self._backoff: dict[int, int] = {}   # bucket -> the next pause after a loss
        self._gain: dict[int, tuple[float, int]] = {}   # bucket -> (smoothed expected gain, rounds)

    def left(self, batch: int) -> int:
        """Rounds still to skip at `batch`'s bucket."""
        return self._left.get(batch_bucket(batch), 0)

    def skip(self, batch: int) -> bool:
        """Whether a round of `batch` requests is skipped (paused); counts it when it is."""
        bucket = batch_bucket(batch)
        if self._left.get(bucket, 0) <= 0:
            return False
        self._left[bucket] -= 1
        return True

    def pause(self, batch: int, rounds: int) -> None:
        """Skips the next `rounds` rounds at `batch`'s bucket (replaces what was left there)."""
        self._left[batch_bucket(batch)] = max(int(rounds), 0)

    def judge(self, batch: int, gain: float) -> bool:
        """Folds one drafted round's expected gain (its expected tokens/s over plain decoding's)
        into the bucket's average; True when the average says drafting loses there (<= 1)."""
        bucket = batch_bucket(batch)
        mean, rounds = self._gain.get(bucket, (0.0, 0))
        rounds += 1
        mean += max(SMOOTH, 1.0 / rounds) * (gain - mean)
        self._gain[bucket] = (mean, rounds)
        return mean <= 1.0

    def gain(self, batch: int) -> float | None:
        """The smoothed expected gain at `batch`'s bucket (None before its first drafted round)."""
        entry = self._gain.get(batch_bucket(batch))
        return None if entry is None else entry[0]

    def lost(self, batch: int, longest: bool = False, double: bool = True) -> None:
        """Drafting lost at `batch`'s bucket: pause there for the bucket's backoff (or, with
        `longest`, for `max_probe_every` rounds), and double the backoff (capped) unless
        `double` is False."""
        bucket = batch_bucket(batch)
        backoff = self.max_probe_every if longest else self._backoff.get(bucket, self.probe_every)
        self._left[bucket] = backoff
        self._backoff[bucket] = min(2 * backoff, self.max_probe_every) if double else backoff

    def won(self, batch: int) -> None:
        """Drafting won at `batch`'s bucket: the next loss there pauses for `probe_every`."""
        self._backoff[batch_bucket(batch)] = self.probe_every
