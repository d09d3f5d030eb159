# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Stragglers: what share of a draining batch's drafted gain its last request to finish keeps.

When the engine only drains the requests it holds (`LLM.generate`: `draining(True)`), a call ends
with its last reply, and a drafted round costs about the same whether it serves 8 requests or the
one still running. A round's expected gain counts every request's accepted drafts, but the call is
shortened only by those of the request that finishes last: with requests of output length L_i that
emit t_i tokens per drafted round, plain decoding takes max_i L_i steps and drafting
max_i (L_i / t_i) rounds. So over batches of B requests drawn from the finished ones, the call's
tokens per round are E[max_i L_i] / E[max_i L_i / t_i], against the round-weighted mean
sum L_i / sum (L_i / t_i) that the rounds' expected accepted drafts estimate; `factor(B)` is the
first over the second, at most 1. On the H200 (session 40, 8 requests in batch form, every reply
128 tokens) fixed-7 needed 45.8 rounds a call where the mean of 3.73 tokens a round needs 34.3:
0.75 of the gain read per round, and the default, reading a gain of 1.08, took 1.18x plain
decoding's time in the calls where it drafted. Judged so (`DSparkProposer` with `judge_stragglers`,
opt-in), the policy read 0.97 at 8 requests on the H200 in session 41 (its sample is the requests
it drafted, mostly in their openings) and did not beat the mean request's judgement there;
`sim_engine_calls.py --stragglers --hard 0.3 0.6` (replies unlike each other) gains 2-19 points.

Each request's drafted rounds and the tokens they emitted are counted from its commits (`begin`,
`commit`); a request that finishes (`finish`) after at least `MIN_ROUNDS` drafted rounds joins a
sample of the last `SAMPLE`. Device-free; the draws use a generator seeded by B alone, so the
factor is a function of the sample.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable

MIN_ROUNDS = 4      # drafted rounds a finished request needs to join the sample (fewer: t_i is noise)
MIN_SAMPLE = 8      # finished requests in the sample before the factor departs from 1 (H200, session 41:
# with 16, the default's sample held 9-11 after 2, 8 and 32 requests, as it drafted little, and never acted)
SAMPLE = 256        # the last finished requests kept
DRAW_SLOTS = 8192   # requests drawn per factor, over max(32, DRAW_SLOTS // B) batches
REFRESH = 8         # requests that join before the factors are drawn again


class Stragglers:
    """Per-request tokens per drafted round, and the straggler factor of a draining batch.

    Args:
        plain: seconds of a plain decode step at b requests (b >= 1).
        drafted: seconds of a drafted round at b requests.
    """

    def __init__(self, plain: Callable[[int], float], drafted: Callable[[int], float]) -> None:
        self._plain, self._drafted = plain, drafted
        self._open: dict[str, tuple[int, int, int]] = {}   # id -> (tokens before the round, output, verified)
        self._live: dict[str, list[int]] = {}          # id -> [drafted rounds, tokens they emitted, output]
        self._sample: deque[tuple[int, float]] = deque(maxlen=SAMPLE)   # (L_i, L_i / t_i)
        self._factors: dict[int, float] = {}           # B -> factor, until `REFRESH` more join
        self._joined = 0

    def __len__(self) -> int:
        return len(self._sample)

    def begin(self, rounds: list[tuple[str, int, int, int]]) -> None:
        """A drafted round: `(request id, tokens before it (prompt + output), output tokens before
        it, drafts verified)` per request drafted for. A request not committed by the next `begin`
        counts nothing."""
        self._open = {rid: (before, output, verified) for rid, before, output, verified in rounds}

    def commit(self, request_id: str, num_tokens: int) -> None:
        """The request holds `num_tokens` tokens after the round's verification (a count outside
        the round's reach, 1 to verified + 1 tokens more, is some other step's: ignored)."""
        entry = self._open.pop(request_id, None)
        if entry is None or not entry[0] < num_tokens <= entry[0] + entry[2] + 1:
            return
        before, output, _ = entry
        counts = self._live.setdefault(request_id, [0, 0, 0])
        counts[0] += 1
        counts[1] += num_tokens - before
        counts[2] = output + num_tokens - before

    def finish(self, request_id: str) -> None:
        """The request left: it joins the sample after `MIN_ROUNDS` drafted rounds."""
        self._open.pop(request_id, None)
        counts = self._live.pop(request_id, None)
        if counts is None or counts[0] < MIN_ROUNDS:
            return
        rounds, emitted, output = counts
        self._sample.append((output, output * rounds / emitted))
        self._joined += 1
        if self._joined >= REFRESH:
            self._joined = 0
            self._factors.clear()

    def factor(self, batch: int) -> float:
        """The straggler factor at `batch` requests, in (0, 1]: a draining batch's gain from drafting
        over the gain a round at `batch` reads, for batches drawn from the sample, whose requests
        finish one by one, the rounds and plain steps then running at fewer requests (see the
        module docstring). 1.0 below 2 requests or before `MIN_SAMPLE` requests joined."""
        if batch < 2 or len(self._sample) < MIN_SAMPLE:
            return 1.0
        cached = self._factors.get(batch)
        if cached is not None:
            return cached
        sample = list(self._sample)
        mean = sum(length for length, _ in sample) / sum(rounds for _, rounds in sample)
        steps = [0.0] + [self._plain(b) for b in range(1, batch + 1)]
        rounds = [0.0] + [self._drafted(b) for b in range(1, batch + 1)]
        rng = random.Random(batch)
        plain_s = drafted_s = 0.0
        for _ in range(max(32, DRAW_SLOTS // batch)):
            drawn = rng.choices(sample, k=batch)
            plain_s += _drain(sorted(length for length, _ in drawn), steps)
            drafted_s += _drain(sorted(need for _, need in drawn), rounds)
        value = min(1.0, plain_s / drafted_s / (mean * steps[batch] / rounds[batch]))
        self._factors[batch] = value
        return value


def _drain(needs: list[float], cost: list[float]) -> float:
    """Seconds to run requests needing `needs` steps each (ascending) when a step at b requests
    costs `cost[b]`: after the j-th finishes, the rest run at len(needs) - j requests."""
    total, done, left = 0.0, 0.0, len(needs)
    for need in needs:
        total += (need - done) * cost[left]
        done, left = need, left - 1
    return total
