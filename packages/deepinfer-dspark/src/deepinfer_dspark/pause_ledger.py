# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""PauseLedger: when confidence scheduling skips drafting, kept per batch-size bucket.

Whether a drafted round beats a plain decode step depends on the load: on the H200 with
SmolLM2-135M a round pays at 1 request and loses at 8 and above
(`packages/deepinfer-dspark/BENCHMARKS.md`). A single pause counter for the whole engine forgot
that: every time the batch moved to another size it had to be reset (or kept a pause decided at
another load), and each chat batch, whose requests finish one by one, went through all the sizes
again, re-learning with probe rounds that cost up to 6x a plain step. So the ledger keeps, per
bucket of the batch size (`ledger_bucket`: 1, 2, 3, 4, 6, 8, 12, 16, ..., powers of two and
3/4 of them, so that one bucket spans at most 1.5x in load):

- the rounds still to skip there (decremented only by rounds at that bucket);
- the smoothed expected gain of drafting there: the mean of each drafted round's expected tokens
  per second over plain decoding's, over the bucket's first 1 / `SMOOTH` rounds, then an
  exponential moving average of weight `SMOOTH`. One round's confidences say little about the
  next round's, so a round predicted to lose among rounds predicted to win does not pause
  drafting on its own;
- the next pause (exponential backoff from `probe_every` up to `max_probe_every`, and at least
  what keeps the probes' loss to a set share of the time: `lost(at_least=...)`, see
  `DSparkProposer._plan_pause`). The proposer pauses only when both the average and the round
  just drafted lose, and resets the backoff otherwise: a round that wins while the average loses
  drafts on, so the average catches up as drafted rounds accumulate when the load or the drafts
  turn favourable (about 100 rounds after a long losing spell in simulations). At a young bucket
  a close call is probed every `probe_every` rounds, a clear loss ever more rarely; once the
  bucket's average is settled, a pause also pays for the next probe's overhead (at least ~100
  rounds with the defaults) and may be extended to larger buckets (`extend`).

Every decision reads earlier rounds only, never the drafts it governs, so verification stays
lossless (the argument of the paper's stale-capacity variant). Device-free.
"""

from __future__ import annotations

import functools

SMOOTH = 1 / 64   # weight of the newest round in the expected-gain average


@functools.cache   # ~10 calls per engine step while paused: a C-level lookup instead of a frame
def ledger_bucket(batch: int) -> int:
    """The smallest of 1, 2, 3, 4, 6, 8, 12, 16, ... (2^i and 3 * 2^(i-2)) that is >= `batch`
    (1 for 0)."""
    power = 1 << max(batch - 1, 0).bit_length()          # the power of two >= batch
    return power * 3 // 4 if power >= 4 and batch <= power * 3 // 4 else power


def bucket_floor(batch: int) -> int:
    """The fewest requests of `batch`'s bucket (`ledger_bucket`): one more than the bucket below
    (3 * 2^(i-2) below 2^i, 2^(i-1) below 3 * 2^(i-2)); 1 for 0 or 1. The buckets refine the powers
    of two (`measured_rates.batch_bucket`): the floor's count shares both buckets with `batch`."""
    bucket = ledger_bucket(batch)
    if bucket <= 2:
        return bucket
    below = bucket * 3 // 4 if bucket & (bucket - 1) == 0 else bucket * 2 // 3
    return below + 1


def buckets_above(batch: int, largest: int) -> list[int]:
    """The buckets after `batch`'s, up to `largest`'s, in increasing order."""
    out, bucket, last = [], ledger_bucket(batch), ledger_bucket(largest)
    while bucket < last:
        bucket = ledger_bucket(bucket + 1)
        out.append(bucket)
    return out


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
        self._scale: dict[int, float] = {}   # bucket -> the straggler factor its average holds (`rescale`)
        self._repeats: dict[int, int] = {}   # bucket -> settled losses since its last win (`lost(settled=True)`)

    def left(self, batch: int) -> int:
        """Rounds still to skip at `batch`'s bucket."""
        return self._left.get(ledger_bucket(batch), 0)

    def skip(self, batch: int, rounds: int = 1) -> bool:
        """Whether a round of `batch` requests is skipped (paused); counts it when it is
        (`rounds` such rounds at once: as many as are left)."""
        bucket = ledger_bucket(batch)
        left = self._left.get(bucket, 0)
        if left <= 0:
            return False
        self._left[bucket] = left - min(rounds, left)
        return True

    def pause(self, batch: int, rounds: int) -> None:
        """Skips the next `rounds` rounds at `batch`'s bucket (replaces what was left there)."""
        self._left[ledger_bucket(batch)] = max(int(rounds), 0)

    def judge(self, batch: int, gain: float) -> bool:
        """Folds one drafted round's expected gain (its expected tokens/s over plain decoding's)
        into the bucket's average; True when the average says drafting loses there (<= 1)."""
        bucket = ledger_bucket(batch)
        mean, rounds = self._gain.get(bucket, (0.0, 0))
        rounds += 1
        mean += max(SMOOTH, 1.0 / rounds) * (gain - mean)
        self._gain[bucket] = (mean, rounds)
        return mean <= 1.0

    def rescale(self, batch: int, factor: float) -> None:
        """The rounds at `batch`'s bucket are judged at straggler factor `factor` (> 0) from now on:
        the average, which holds the factor last given (1.0 before the first), is scaled by the new
        factor over it. A round's gain is linear in its tokens (`DraftCosts.gain`), so the average then
        reads as if every earlier round had carried `factor` (`PausePolicy.rescale_stragglers`).
        Raises ValueError unless `factor` > 0 (a zero would lose the average for good)."""
        if not factor > 0:
            raise ValueError(f"factor: must be > 0, got {factor}")
        bucket = ledger_bucket(batch)
        old = self._scale.get(bucket, 1.0)
        if factor == old:
            return
        self._scale[bucket] = factor
        entry = self._gain.get(bucket)
        if entry is not None:
            self._gain[bucket] = (entry[0] * factor / old, entry[1])

    def rounds(self, batch: int) -> int:
        """Drafted rounds judged at `batch`'s bucket so far."""
        return self._gain.get(ledger_bucket(batch), (0.0, 0))[1]

    def gain(self, batch: int) -> float | None:
        """The smoothed expected gain at `batch`'s bucket (None before its first drafted round)."""
        entry = self._gain.get(ledger_bucket(batch))
        return None if entry is None else entry[0]

    def lost(self, batch: int, double: bool = True, at_least: int = 0, settled: bool = False) -> int:
        """Drafting lost at `batch`'s bucket: pause there for the bucket's backoff (or `at_least`
        rounds when longer), and double the backoff (capped) unless `double` is False (then the
        next pause is `probe_every` again); `settled`: a loss the caller prices as settled (a
        settled average, or a bucket whose loss a smaller one implied), counted in `repeats` until
        the bucket's next win. Returns the pause set, in rounds."""
        bucket = ledger_bucket(batch)
        if settled:
            self._repeats[bucket] = self._repeats.get(bucket, 0) + 1
        backoff = self._backoff.get(bucket, self.probe_every)
        self._left[bucket] = max(backoff, int(at_least))
        self._backoff[bucket] = min(2 * backoff, self.max_probe_every) if double else self.probe_every
        return self._left[bucket]

    def extend(self, batch: int, rounds: int) -> None:
        """Skips at least the next `rounds` rounds at `batch`'s bucket (keeps a longer pause
        there): a loss learnt at another bucket that implies one here (`DSparkProposer`)."""
        bucket = ledger_bucket(batch)
        self._left[bucket] = max(self._left.get(bucket, 0), int(rounds))

    def won(self, batch: int) -> None:
        """Drafting won at `batch`'s bucket: the next loss there pauses for `probe_every`, and
        its settled losses in a row (`repeats`) start again from 0."""
        bucket = ledger_bucket(batch)
        self._backoff[bucket] = self.probe_every
        self._repeats.pop(bucket, None)

    def repeats(self, batch: int) -> int:
        """Settled losses at `batch`'s bucket (`lost(settled=True)`) since its last win (`won`)."""
        return self._repeats.get(ledger_bucket(batch), 0)
