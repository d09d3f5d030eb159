# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""MatchClasses: the accepted share of prompt-lookup drafts by the length of the match behind
them, as `LookupAssist` prices its rounds. Device-free."""

from __future__ import annotations

import math

PRIOR_RATES = (0.3, 0.5, 0.8)   # the accepted share of lookup drafts before any is verified, by
# match class: short matches in fresh text mostly fail; a match over 4n tokens is a loop, and in the
# H200's looping replies (session 28) fixed-7 accepted 0.86-1.00 of its drafts
PRIOR_DRAFTS = 4.0                    # the prior's weight, in drafts
DECAY = 0.98                          # per lookup draft verified: newer text weighs more
AGE_ROUNDS = 64                       # engine rounds over which a class drifts back to the prior by e


class MatchClasses:
    """The accepted share of lookup drafts by the length m of the match behind them: m < 2n,
    2n <= m < 4n, m >= 4n (n = the shortest match). Each share is decayed (`DECAY` per draft
    verified), starts at its `PRIOR_RATES` over `PRIOR_DRAFTS` drafts, and below it drifts back there
    over engine rounds (`age`), so a class one rejected round priced out is tried again: a review
    helper found a loop's class switched off for good by one rejected round at token 26."""

    def __init__(self, min_n: int) -> None:
        self.min_n = min_n
        self.sums = [[rate * PRIOR_DRAFTS, PRIOR_DRAFTS] for rate in PRIOR_RATES]
        self.unaged = 0   # rounds passed and not yet applied (`age` is asked every step: it only counts)

    def of(self, match: int) -> int:
        """The class of a match of `match` tokens."""
        return 0 if match < 2 * self.min_n else 1 if match < 4 * self.min_n else 2

    def rate(self, cls: int) -> float:
        self._apply_age()
        accepted, verified = self.sums[cls]
        return accepted / verified

    def add(self, cls: int, drafts: int, accepted: int) -> None:
        self._apply_age()
        weight = DECAY ** drafts
        accepted_sum, verified = self.sums[cls]
        self.sums[cls] = [accepted_sum * weight + accepted, verified * weight + drafts]

    def age(self, rounds: int) -> None:
        """`rounds` engine rounds passed: each class whose share is below the prior moves back
        toward it by 1 - exp(-rounds / AGE_ROUNDS) (a class above it keeps its evidence: in
        `sim_engine_calls.py --lookup` aging those too priced loops out again between them)."""
        if rounds > 0:
            self.unaged += rounds

    def _apply_age(self) -> None:
        rounds, self.unaged = self.unaged, 0
        if rounds <= 0:
            return
        keep = math.exp(-rounds / AGE_ROUNDS)
        self.sums = [[a * keep + rate * PRIOR_DRAFTS * (1.0 - keep), v * keep + PRIOR_DRAFTS * (1.0 - keep)]
                     if a < rate * v else [a, v] for (a, v), rate in zip(self.sums, PRIOR_RATES)]
