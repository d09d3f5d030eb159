# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""ResumeCost: when to resume drafting that must first project a large buffered context.

While drafting is paused the target's features wait in `PendingContext`; the first drafted round
after the pause projects them all (`DSparkProposer._flush`), at a host cost that grows with the
(request, step) pairs buffered, finished requests' included. After a long pause at a heavy load
that is ~10^4 pairs: 6 ms of host time for 10,784 buffered rows after a 128-request batch on the
CPU machine (BENCHMARKS.md, session 11). On the H200 the few rounds drafted in a batch of 8 or
32 requests, 1-4 of them, each cost an inferred 10-30 ms more than a plain step (sessions 10-11),
where the profiles predict ~3 ms; the batch's last requests, alone where drafting wins a little,
pay such a flush for a handful of drafted rounds.

Resuming is a rent-or-buy choice (ski rental): paying the flush (buying) pays off only if
drafting then runs long enough at a winning load, which is not known in advance (the batch may
end in 3 rounds or 3,000). The deterministic rule that is never worse than twice the best choice
in hindsight (Karlin et al. 1988, "Competitive snoopy caching") keeps renting (plain rounds)
until the gain forgone so far equals the price, then buys. So each round that declines to resume
adds the time drafting would have saved to `forgone`; drafting resumes once `forgone` reaches the
flush's predicted cost, pairs times the measured host seconds per pair. Device-free.
"""

from __future__ import annotations

PRIOR_SECONDS_PER_PAIR = 0.5e-6   # before any flush is timed (~0.2 us measured on the CPU machine)
MIN_TIMED_PAIRS = 1024            # smaller flushes are not timed: their fixed part would dominate
SMOOTH = 0.25                     # weight of the newest timed flush
EXPLORE = 0.02                    # the saving assumed per round where drafting is expected to lose


class ResumeCost:
    """The measured flush cost and the forgone gain of the rounds that declined to resume.

    Attributes:
        seconds_per_pair: host seconds per buffered (request, step) pair of a flush (smoothed).
        forgone: seconds drafting would have saved in the rounds that declined since the last
            flush (estimated).
        declined: rounds that declined to resume (metrics).
    """

    def __init__(self) -> None:
        self.seconds_per_pair = PRIOR_SECONDS_PER_PAIR
        self.forgone = 0.0
        self.declined = 0

    def timed(self, seconds: float, pairs: int) -> None:
        """A flush of `pairs` pairs took `seconds` of host time; the forgone gain restarts."""
        self.forgone = 0.0
        if pairs >= MIN_TIMED_PAIRS and seconds > 0:
            self.seconds_per_pair += SMOOTH * (seconds / pairs - self.seconds_per_pair)

    def waits(self, pairs: int, gain: float, step_seconds: float) -> bool:
        """Whether to decline resuming this round: the gain forgone so far, this round's
        included, is below the price of flushing `pairs` pairs (a price within one round's
        saving is paid at once). A round's saving is `step_seconds` (a plain step) times
        1 - 1 / `gain` (drafting emits `gain` times plain decoding's tokens per second), at least
        `EXPLORE` of a step (so an estimated loss is still probed, rarely)."""
        self.forgone += step_seconds * max(1.0 - 1.0 / gain if gain > 0 else 0.0, EXPLORE)
        if self.forgone >= pairs * self.seconds_per_pair:
            return False
        self.declined += 1
        return True
