# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Run noise: what the slowest of a drained batch's requests keeps of a short drafted run's gain.

A drafted round gives each request 1 + its accepted drafts, a count that varies from round to
round (with k = 7 and a per-draft acceptance of ~0.74 its standard deviation is ~2.4 tokens about
a mean of ~3.5). When the engine drains a batch whose requests would end together (chat replies
at their `max_tokens`, the benchmark's batches: 34 of 48 replies at 8 requests on the H100 in
session 69), the call is shortened only by the tokens of the request that gained the fewest.
After R drafted rounds request i holds S_i = sum of its R counts, mean R t and standard deviation
sqrt(R) s (rounds independent), and the fewest of B such sums is about R t - e_B sqrt(R) s, with
e_B the expected maximum of B standard normal draws (the order statistic: e_2 = 1/sqrt(pi) =
0.564, e_8 = 1.424; Blom 1958 gives approximations, here it is integrated). Over a run of R more
rounds after `before` drafted ones, the slowest request's tokens a round are then

    t - e_B s (sqrt(before + R) - sqrt(before)) / R,

at least 1 (a round gives every request its bonus token), and its share of t is the factor a
round's judged gain keeps (`run_factor`). A long run keeps most (R = 35, a whole drain of
128-token replies: ~0.84 at 8 requests, where fixed-7's drains kept 0.78-0.81 of the rounds' gain
on the H100, `benchmarks/drain_factor.py`); a short one little (R = 4: ~0.62). Traced on the H100
at 8 requests (session 70, run34 b, round 6): an opening run of 4 rounds judged at 1.23 gave
its batch 4.35 tokens a request a round on average, and the call ended 7 plain steps sooner
(2.75 tokens a round for the request that ended it, 0.63 of the mean), so the run lost.

Over few rounds the sums are skewed and the normal approximation reads low (0.52 against a
simulated 0.55 at 8 requests and 4 rounds of k = 7 drafts accepted at 0.74, ~0.015 low at 8
rounds: `tests/test_run_noise.py`): a short run is judged a little too harshly. The spread pools
every request-round (all loads, openings and bodies, a reply's capped last round): it holds the
variation between requests as well as between rounds, so it reads s high rather than low.

`RoundSpread` measures t and s over every request-round committed (Welford's online variance,
Welford 1962). Device-free.
"""

from __future__ import annotations

import math
from functools import lru_cache

MIN_REQUEST_ROUNDS = 32   # request-rounds measured before the factor departs from 1


class RoundSpread:
    """Mean and standard deviation of the tokens a request gains in a drafted round (bonus included)."""

    def __init__(self) -> None:
        self.count, self.mean, self._m2 = 0, 0.0, 0.0

    def add(self, tokens: int) -> None:
        """One request-round that gave `tokens` (>= 1)."""
        self.count += 1
        delta = tokens - self.mean
        self.mean += delta / self.count
        self._m2 += delta * (tokens - self.mean)

    @property
    def std(self) -> float:
        """The sample standard deviation (0.0 below two request-rounds)."""
        return math.sqrt(self._m2 / (self.count - 1)) if self.count > 1 else 0.0


@lru_cache(maxsize=512)
def expected_max_normal(m: int) -> float:
    """E[max of `m` independent standard normal draws] (0.0 for m = 1), by the integral
    E = int_0^inf (1 - Phi(x)^m) dx - int_-inf^0 Phi(x)^m dx on a 0.005-wide grid over [-9, 9]
    (within 1e-4 of the tabulated order statistics). Raises ValueError for m < 1."""
    if m < 1:
        raise ValueError(f"m: must be >= 1, got {m}")
    width, total = 0.005, 0.0
    for i in range(-1800, 1800):
        x = (i + 0.5) * width
        power = (0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))) ** m
        total += (1.0 - power) if x > 0 else -power
    return total * width


def run_factor(batch: int, tokens: float, spread: RoundSpread, before: int, rounds: float) -> float:
    """The share of a round's judged gain that the slowest of `batch` requests keeps over a run
    of `rounds` more drafted rounds after `before` (see the module docstring), in (0, 1].

    Args:
        batch: requests that would end the call together (>= 1; 1.0 below 2).
        tokens: a request's judged tokens a round (the round's tau over the batch).
        spread: the measured request-rounds; 1.0 until it holds `MIN_REQUEST_ROUNDS`.
        before: drafted rounds every request of the batch already had in this call (their fewest).
        rounds: the run's expected rounds (> 0)."""
    if batch < 2 or spread.count < MIN_REQUEST_ROUNDS or tokens <= 1.0 or rounds <= 0:
        return 1.0
    lag = expected_max_normal(batch) * spread.std * (math.sqrt(before + rounds) - math.sqrt(before)) / rounds
    return max(1.0 / tokens, 1.0 - lag / tokens)
