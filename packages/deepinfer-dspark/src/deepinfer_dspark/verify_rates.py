# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""VerifyRates: the round rate Algorithm 1 weighs, as a function of the tokens a round verifies.

Algorithm 1 (DSpark, Cheng et al. 2026) maximises expected emitted tokens times SPS(T), T the
tokens the target verifies. With one speculative profile, measured on rounds of B requests
verifying k drafts each (T = B (1 + k)), SPS at a smaller T reads the rate of a full round of
FEWER requests. But a round of B requests has already drafted for all B by the time it chooses
what to verify, and its host work grows with the verified tokens too: on the H200 (session 12,
BENCHMARKS.md) a round of 1 request cost 2.8 ms verifying 1 draft and 3.5 ms verifying 7, and
fixed-3 beat fixed-7 by 8%, while the single profile, flat from 2 to 8 tokens, made confidence
scheduling verify all 7.

With a second profile measured on rounds verifying ONE draft per request (`short`, batch tokens
= 2 B), the round time of B requests is interpolated linearly in T between the two measured
rounds of B requests:

    t(B, T) = t1 + (t_k - t1) (T - 2B) / ((k - 1) B),   t1 = 1 / short(2B), t_k = 1 / sps(B (1 + k)),

for T in [2B, B (1 + k)], held at t1 below 2B (the drafting is paid whatever is verified) and
with a slope of at least zero. A k = 1 round drafts one position through the sequential heads
where a confidence round drafts k (the parallel backbone runs the whole block either way), so
the slope also carries that small difference: it errs towards shorter verification.

With `full_round` (`speculative_config.prefix_pricing = "full_round"`), every round of B
requests is priced as the full one, 1 / sps(B (1 + k)), whatever it verifies: the price the
pause policy puts on a drafted round without the short profile (`round_rate`). Algorithm 1 then
verifies every draft with a chance of acceptance (more verified drafts never lower the expected
tokens), and whether to draft
at a load is the pause policy's call alone. Without it, the single profile prices a round of B
requests verifying T tokens at sps(T), the rate of a full round of T / (1 + k) requests, while
the pause policy prices it as the full round of B: in the simulation (session 18, acceptance 0.8
at 32 requests) Algorithm 1 then verified short prefixes that the pause policy judged losses, and
drafted 5% of the rounds where fixed-7 gained 6% (BENCHMARKS.md). Which price is nearer the
truth depends on whether verification is host-bound (small targets: nearly flat in T) or
compute-bound.

The rate depends on B and T only, never on the drafts, so the early stop keeps Algorithm 1
lossless. Device-free.
"""

from __future__ import annotations

import torch

from deepinfer_dspark.sps import SPSProfile


class RoundRate:
    """Rounds per second of a round of `batch` requests as a function of its verified tokens.

    Callable on a tensor of token counts (float64 of the same shape), with `at(T)` for one
    count, as `schedule_prefixes` and `schedule_rows` read a rate.
    """

    def __init__(self, batch: int, short_time: float, long_time: float, num_tokens: int) -> None:
        self.floor = 2 * batch                               # T of the k = 1 round
        self.short_time = short_time
        span = (num_tokens - 1) * batch
        self.slope = max(long_time - short_time, 0.0) / span if span > 0 else 0.0   # seconds per token

    def at(self, batch_tokens: int) -> float:
        """Rounds per second at `batch_tokens` verified tokens (T)."""
        return 1.0 / (self.short_time + self.slope * max(batch_tokens - self.floor, 0))

    def __call__(self, batch_tokens: torch.Tensor | int) -> torch.Tensor:
        t = torch.as_tensor(batch_tokens, dtype=torch.float64)
        return 1.0 / (self.short_time + self.slope * (t - self.floor).clamp(min=0))


class VerifyRates:
    """The rate function Algorithm 1 reads for a round of B requests.

    Args:
        sps: speculative-round profile at batch tokens B (1 + k) (rounds verifying k each).
        num_tokens: k.
        short: speculative-round profile measured on rounds verifying 1 draft per request
            (batch tokens 2 B), or None.
        full_round: price every round of B requests as the full one (a flat `RoundRate`);
            not with `short`.

    `for_batch(B)` is `sps` itself without `short` (the single-profile behaviour) or when
    k = 1, else a `RoundRate` interpolating between the two measured rounds of B requests;
    with `full_round`, a flat `RoundRate` at the full round's rate.

    Raises:
        ValueError: `full_round` with `short`.
    """

    def __init__(self, sps: SPSProfile, num_tokens: int, short: SPSProfile | None = None,
                 full_round: bool = False) -> None:
        if full_round and short is not None:
            raise ValueError("full_round: prices every round as the full one; the short profile is then unused")
        self.sps = sps
        self.num_tokens = num_tokens
        self.short = short
        self.full_round = full_round
        self._memo: dict[int, RoundRate] = {}

    def for_batch(self, batch: int) -> SPSProfile | RoundRate:
        """The rate of a round of `batch` (>= 1) drafted requests, by verified tokens."""
        if not self.full_round and (self.short is None or self.num_tokens == 1):
            return self.sps
        rate = self._memo.get(batch)
        if rate is None:
            full = 1.0 / self.sps.at(batch * (1 + self.num_tokens))
            short = full if self.full_round else 1.0 / self.short.at(2 * batch)
            rate = self._memo[batch] = RoundRate(batch, short, full, self.num_tokens)
        return rate
