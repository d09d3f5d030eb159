# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""FullAcceptance: a request's expected accepted drafts had all k been verified, measured online.

A request's accepted drafts depend on the drafter and the text, not on the batch it is in, so
what is measured at one load bounds the gain of drafting at every other
(`DSparkProposer.expected_loss`). Measured directly it would need every draft verified; confidence
scheduling verifies only the confident prefixes, the shorter the heavier the load. So the
estimate is built per draft position j from the calibrated survival probabilities s_j (the
probability that the first j + 1 drafts are all accepted):

  a = sum_j min(1, r_j * mean(s_j)),   r_j = (1 + requests that accepted >= j + 1 drafts)
                                             / (1 + sum of s_j over the requests that verified j + 1)

mean(s_j) over every drafted request (verified or not), r_j the realized / predicted ratio at
that position over the requests that verified it (a position never verified takes the ratio of
the one before; each term is kept <= the one before, as acceptance of draft j + 1 needs draft
j's). Every sum decays by exp(-1 / `age_rounds`) per engine round (`AGE_ROUNDS` by default, or
`speculative_config.acceptance_age_rounds`), drafted or not: evidence
ages, so a load ruled out long ago is tried again (`upper` widens as the requests behind it
fade) and new text replaces old. Device-free.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

AGE_ROUNDS = 2048   # engine rounds over which a measurement's weight falls by e


class FullAcceptance:
    """Decayed per-position sums over drafted requests.

    Args:
        num_tokens: k, drafts per request per round.
        age_rounds: engine rounds over which a measurement's weight falls by e (`AGE_ROUNDS`).
            Longer: a load ruled out by the bound is tried again later (the bound widens more
            slowly as its evidence fades), and new text replaces old more slowly.

    Raises:
        ValueError: `age_rounds` not an int >= 1 (named as `speculative_config.acceptance_age_rounds`).
    """

    def __init__(self, num_tokens: int, age_rounds: int = AGE_ROUNDS) -> None:
        if isinstance(age_rounds, bool) or not isinstance(age_rounds, int) or age_rounds < 1:
            raise ValueError(f"speculative_config.acceptance_age_rounds: must be an int >= 1, got {age_rounds!r}")
        self.k = num_tokens
        self.age_rounds = age_rounds
        self._survival = [0.0] * num_tokens    # sum of s_j, every drafted request
        self._predicted = [0.0] * num_tokens   # sum of s_j, requests that verified position j
        self._realized = [0.0] * num_tokens    # requests that accepted position j
        self._requests = 0.0                   # every drafted request
        self._verified = 0.0                   # those that verified drafts: the evidence
        self.most = 0.0                        # the most evidence ever held (`requests` at its peak)
        self._now = self._at = 0
        self._mean: float | None = None       # `mean`, until the sums change

    def tick(self, rounds: int = 1) -> None:
        """One engine round (or `rounds`) has passed (drafted or not)."""
        self._now += rounds

    @property
    def requests(self) -> float:
        """The requests that verified drafts behind the estimate, decayed (its effective sample
        size; requests that verified none add predictions, not evidence)."""
        self._age()
        return self._verified

    def add(self, survival: Sequence[float], verified: int, accepted: int | None) -> None:
        """One drafted request: its survival probabilities `[k]`, the drafts it verified, and
        how many of those the target accepted (None when it verified none)."""
        self._age()
        self._mean = None
        self._requests += 1.0
        self._verified += 1.0 if accepted is not None and verified > 0 else 0.0
        self.most = max(self.most, self._verified)
        head = survival[:self.k]
        totals = self._survival
        for j, s in enumerate(head):
            totals[j] += s
        if accepted is not None:   # (per position j < verified: predicted s_j, realized [accepted > j])
            predicted, realized = self._predicted, self._realized
            for j, s in enumerate(head[:verified]):
                predicted[j] += s
            for j in range(min(accepted, verified, len(head))):
                realized[j] += 1.0

    def mean(self) -> float | None:
        """a: expected accepted drafts per request at full verification (None without data)."""
        self._age()
        if self._requests <= 0.0:
            return None
        if self._mean is None:
            self._mean = self._estimate()
        return self._mean

    def _estimate(self) -> float:
        total, ratio, last = 0.0, 1.0, 1.0
        for j in range(self.k):
            if self._predicted[j] > 0.0 or self._realized[j] > 0.0:   # shrunk to 1 by one pseudo-draft
                ratio = (self._realized[j] + 1.0) / (self._predicted[j] + 1.0)
            last = min(last, ratio * self._survival[j] / self._requests)
            total += last
        return total

    def upper(self, z: float = 2.0) -> float | None:
        """An upper confidence bound on a: a + z sigma / sqrt(n), with sigma^2 = max(a (k - a), 1)
        (a (k - a) is the largest variance of a count in [0, k] with mean a; at least 1, so a
        prediction of ~0 is not taken as certain) and n = `requests` (None without any)."""
        a = self.mean()
        if a is None or self._verified <= 1e-6:   # no evidence left (aged away)
            return None
        return a + z * math.sqrt(max(a * (self.k - a), 1.0) / self._verified)

    def _age(self) -> None:
        if self._now == self._at:
            return
        factor = math.exp(-(self._now - self._at) / self.age_rounds)
        self._at = self._now
        self._mean = None
        self._requests *= factor
        self._verified *= factor
        self._survival = [v * factor for v in self._survival]
        self._predicted = [v * factor for v in self._predicted]
        self._realized = [v * factor for v in self._realized]
