# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""DraftCosts: what a drafted round and a plain decode step cost at a load, from the profiles.

Confidence scheduling decides per round whether to draft by comparing tokens per second: a
drafted round of B requests emits B plus the accepted drafts at `round_rate(B)` rounds per
second; plain decoding emits B tokens at SPS_decode(B) steps per second (`plain_rate`). Both
rates come from measured `SPSProfile`s (the speculative one measured on rounds drafting and
verifying k tokens per request, the plain one on decode steps), the plain side optionally
scaled by a correction measured while serving (`MeasuredRates`: round over plain step times with
`measure_step_times`, rounds over their prediction with `measure_round_times`). Device-free.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from deepinfer_dspark.sps import SPSProfile

PROBE_SHARE = 0.02           # at a losing load, the share of the time its probe rounds may lose
LONGEST_PROBE_PAUSE = 2048   # rounds: the longest pause that share sets (the evidence's horizon)
# Plain steps a probe loses on top of its round's own loss: the round after a pause also projects
# the context buffered during it, and the step after a drafted round waits for its tokens. On the
# H200 with SmolLM2-135M such a round took 4.5-6.3 ms at 8 requests against 3.3 ms for a drafted
# round and ~1.05 ms for a plain step (BENCHMARKS.md, session 15's step log): 1-3 plain steps.
PROBE_OVERHEAD_STEPS = 2.0
# At few requests a probe costs more, in plain steps: capturing the features for the steps before it
# weighs more against a plain step. On the H200 (session 23, 1 request, step log of call 4) a
# probed call lost ~6 plain steps besides its rounds' own loss: 31 captured steps at +0.1 ms
# (plain 1.2 ms), the flush +3 ms, the step after the round +1 ms.
SMALL_BATCH_OVERHEAD_STEPS = 4.0


def check_probe_share(value: float, key: str = "probe_share") -> float:
    """`value` as a float if it is a number in (0, 1] (a share of the time), else ValueError
    naming `speculative_config.<key>`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value <= 1.0:
        raise ValueError(f"speculative_config.{key}: must be a number in (0, 1] (the share of the time "
                         f"probes may lose at a losing load), got {value!r}")
    return float(value)


def probe_overhead(batch: int) -> float:
    """Plain steps a probe at `batch` requests loses besides its rounds' own loss:
    `PROBE_OVERHEAD_STEPS + SMALL_BATCH_OVERHEAD_STEPS / batch` (6 at 1 request, 2.5 at 8: a fit
    to the H200's two measurements, sessions 15 and 23)."""
    return PROBE_OVERHEAD_STEPS + SMALL_BATCH_OVERHEAD_STEPS / max(batch, 1)


class DraftCosts:
    """Rates of drafted rounds and plain steps by batch size.

    Args:
        num_tokens: k, drafts per request per round.
        sps: the speculative-round profile (batch tokens = B (1 + k)).
        decode: the plain decode-step profile (batch tokens = B).
        correction: B -> the factor that scales the plain side (the drafted rounds' measured
            cost relative to the plain steps', each over its profile; 1.0 when not measured).
        min_gain: the gain over plain decoding a drafted round must exceed to count as a win
            (1.0: break-even). It scales the plain side, so every decision built on `gain`,
            `loses` and `probe_pause` asks for it: a hurdle for the costs the profiles miss (on
            the H200 the ledger read gains of 1.00-1.02 at 8 requests where the engine ran
            0.82-0.85; sessions 33-34, BENCHMARKS.md).
        probe_share: at a losing load, the share of the time its probes may lose
            (`probe_pause`; None: `PROBE_SHARE`; `speculative_config.probe_share`).
        hurdle_above: `min_gain` applies above this many requests only (the proposer passes
            `bound_only`: up to it the pause ledgers' averages pause nothing, and drafting stops
            only where even the bound on the acceptance cannot beat plain decoding itself); 0: at
            every load. The line is drawn by requests, not by ledger bucket: a `bound_only` inside
            a bucket (5, in the bucket of 5-6) averages rounds priced with and without the hurdle.

    Raises:
        ValueError: `min_gain` below 1 or not finite (named as `speculative_config.min_gain`);
            `probe_share` not in (0, 1] (named as `speculative_config.probe_share`).
    """

    def __init__(self, num_tokens: int, sps: SPSProfile, decode: SPSProfile,
                 correction: Callable[[int], float], min_gain: float = 1.0, hurdle_above: int = 0,
                 probe_share: float | None = None) -> None:
        if not (isinstance(min_gain, (int, float)) and not isinstance(min_gain, bool)
                and math.isfinite(min_gain) and min_gain >= 1.0):
            raise ValueError(f"speculative_config.min_gain: must be a finite number >= 1.0, got {min_gain!r}")
        self.num_tokens = num_tokens
        self.sps = sps
        self.decode = decode
        self.correction = correction
        self.min_gain = float(min_gain)
        self.probe_share = PROBE_SHARE if probe_share is None else check_probe_share(probe_share)
        self.hurdle_above = hurdle_above

    def round_rate(self, batch: int) -> float:
        """Drafted rounds per second at `batch` requests, for the decisions to draft or not: the
        speculative profile's rate at B (1 + k) tokens, where it was measured on rounds of B
        requests drafting and verifying k tokens each (as `bench_dspark.py` measures it).

        A round's cost depends on the requests drafted, not only on the tokens verified: drafting
        is k sequential drafter steps over all B rows, and the verification reads B contexts. The
        profile at the round's verified token count (what Algorithm 1 reads to choose the lengths)
        is the rate of a round of fewer requests: at 256 requests verifying 1.1 tokens each it
        read about 5x the measured rate on the H200 (BENCHMARKS.md, session 9), and drafting that
        lost 5x was judged a win. So pausing compares at the rate of a full round of B requests:
        exact when every draft is verified, an upper bound on the cost otherwise (the choice to
        draft errs towards plain decoding)."""
        return self.sps.at(batch * (1 + self.num_tokens))

    def plain_rate(self, batch: int) -> float:
        """Plain decoding's tokens/s at `batch` requests, as the decisions compare it: B
        SPS_decode(B) times `correction(B)` times `min_gain` (above `hurdle_above` requests)."""
        hurdle = self.min_gain if batch > self.hurdle_above else 1.0
        return batch * self.decode.at(batch) * self.correction(batch) * hurdle

    def gain(self, batch: int, tokens: float, rate: float | None = None) -> float:
        """A round emitting `tokens` (B plus the accepted drafts) over plain decoding, in tokens
        per second: tokens `rate` / `plain_rate(B)`, `rate` the round's rounds per second
        (default `round_rate(B)`, the full round)."""
        return tokens * (self.round_rate(batch) if rate is None else rate) / self.plain_rate(batch)

    def gain_factor(self, batch: int) -> float:
        """A full round's gain per token emitted per request: `gain(B, B (1 + a))` is
        (1 + a) times this, for requests accepting `a` drafts each. Assuming a request accepts as
        many drafts in any batch (as `FullAcceptance` does), a bucket where this factor is no
        larger than at a losing bucket loses too."""
        return batch * self.round_rate(batch) / self.plain_rate(batch)

    def loses(self, batch: int, accepted: float) -> bool:
        """Whether a round of `batch` requests each accepting `accepted` drafts is no faster than
        plain decoding (`gain` <= 1)."""
        return batch * (1 + accepted) * self.round_rate(batch) <= self.plain_rate(batch)

    def probe_pause(self, batch: int, gain: float, overhead: float | None = None,
                    share: float | None = None) -> int:
        """Rounds to pause at `batch` after a drafted round of expected `gain` (<= 1) lost, so
        that such probes lose at most `probe_share` of the time there: the round took
        1 / `round_rate(B)` seconds for what plain decoding emits in gain times that, a loss of
        SPS_decode(B) / round_rate(B) (1 - gain) plain steps, plus `overhead` plain steps (the
        next probe follows a pause; default `PROBE_OVERHEAD_STEPS`), spread over the pause. With the
        doubling backoff alone (8, 16, 32, ... rounds) the first probes could cost a third of the
        time: on the H200 profiles of session 11 (BENCHMARKS.md) a probe at 32 requests loses ~2.5
        plain steps, against a first pause of 8. At most `LONGEST_PROBE_PAUSE`. `share`: the share
        of the time, in (0, 1], this pause keeps the probes to instead of `probe_share` (None:
        `probe_share`; `PausePolicy.probe_share_floor`, which checks it)."""
        overhead = probe_overhead(batch) if overhead is None else overhead
        share = self.probe_share if share is None else share
        lost_steps = self.plain_rate(batch) / batch / self.round_rate(batch) * max(1.0 - gain, 0.0) \
            + overhead
        if not math.isfinite(lost_steps) or lost_steps / share >= LONGEST_PROBE_PAUSE:
            return LONGEST_PROBE_PAUSE   # also a NaN gain: the longest pause, never an exception
        return math.ceil(lost_steps / share)
