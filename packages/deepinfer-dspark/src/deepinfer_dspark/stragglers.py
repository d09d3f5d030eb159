# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Stragglers: what share of a draining batch's drafted gain its last request to finish keeps.

When the engine only drains the requests it holds (`LLM.generate`: `draining(True)`) and none
waits, a call ends with its last reply, and a drafted round costs about the same whether it serves
8 requests or the one still running. A round's expected gain counts every request's accepted
drafts, but the call is shortened only by those of the request that finishes last: with requests
of output length L_i that emit t_i tokens per drafted round, plain decoding takes max_i L_i steps
and drafting max_i (L_i / t_i) rounds (at equal costs; `factor` charges each stretch at the
requests left, `_drain`, so the cheaper rounds of a drained batch's tail win part of it back).
`factor(B)` draws batches of B from the finished requests and divides plain decoding's time over
drafting's by what the round-weighted mean sum L_i / sum (L_i / t_i) would read (the rounds'
expected accepted drafts estimate that mean), at most 1. On the H200 (session 40, 8 requests in
batch form, every reply 128 tokens) fixed-7 needed 45.8 rounds a call where the mean of 3.73 tokens
a round needs 34.3: 0.75 of the gain read per round, and the default, reading a gain of 1.08, took
1.18x plain decoding's time in the calls where it drafted. Judged so (`DSparkProposer` with
`judge_stragglers`, opt-in), the policy read 0.97 at 8 requests on the H200 in session 41 (its
sample is the requests it drafted, mostly in their openings) and did not beat the mean request's
judgement there; `sim_engine_calls.py --stragglers --hard 0.3 0.6` (replies unlike each other)
gains 2-19 points.

Each request's rounds are counted from its commits (`begin`, `commit`): every round DSpark drafted
for the batch, with the tokens the request gained in it (prompt-lookup drafts riding along
included: the round costs what it costs either way). A request that finishes (`finish`) after at
least `MIN_ROUNDS` such rounds joins a sample of the last `SAMPLE`, with its output length read
from its live token list (`track`; the engine commits nothing after a request's last step, so that
round is counted from the list too). Device-free; the draws use a generator seeded by B, and the
factors are drawn again once the sample has grown by an eighth since (`_stale`).
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Sequence

from deepinfer_dspark.batch_tail import known_tokens

MIN_ROUNDS = 4      # drafted rounds a finished request needs to join the sample (fewer: t_i is noise)
MIN_SAMPLE = 8      # finished requests in the sample before the factor departs from 1 (H200, session 41:
# with 16, the default's sample held 9-11 after 2, 8 and 32 requests, as it drafted little, and never acted)
SAMPLE = 256        # the last finished requests kept
DRAWS = (32, 512)   # batches drawn per factor: 4096 // B within these (~1-5 ms of Python at any B)


class Stragglers:
    """Per-request tokens per drafted round, and the straggler factor of a draining batch.

    Args:
        plain: seconds of a plain decode step at b requests (b >= 1).
        drafted: seconds of a drafted round at b requests.
    """

    def __init__(self, plain: Callable[[int], float], drafted: Callable[[int], float]) -> None:
        self._plain, self._drafted = plain, drafted
        self._views: dict[str, Sequence[int]] = {}     # id -> live token list (`track`)
        self._prompt: dict[str, int] = {}              # id -> tokens when tracked
        self._open: dict[str, tuple[int, int, int]] = {}   # id -> (tokens before the round, output, most gained)
        self._live: dict[str, list[int]] = {}          # id -> [drafted rounds, tokens they emitted, output]
        self._sample: deque[tuple[int, float]] = deque(maxlen=SAMPLE)   # (L_i, L_i / t_i)
        self._factors: dict[int, float] = {}           # B -> factor, until `_stale`
        self._joined = 0                               # requests joined since the factors were drawn

    def __len__(self) -> int:
        return len(self._sample)

    def track(self, request_id: str, token_ids: Sequence[int]) -> None:
        """The request's live token list (prompt + output, as the engine extends it)."""
        self._views[request_id] = token_ids
        self._prompt[request_id] = len(token_ids)

    def waiting(self, batch: int) -> bool:
        """Whether more requests are tracked than the `batch` running: some wait for a slot, so
        the batch is refilled rather than drained."""
        return len(self._views) > batch

    def begin(self, rounds: list[tuple[str, int, int, int]]) -> None:
        """A drafted round: `(request id, tokens before it (prompt + output), output tokens before
        it, the most drafts it may accept)` per request asked. A request not committed by the next
        `begin` (nor finished) counts nothing for that round."""
        self._open = {rid: (before, output, most) for rid, before, output, most in rounds}

    def commit(self, request_id: str, num_tokens: int) -> None:
        """The request holds `num_tokens` tokens after the round's verification (a count outside
        the round's reach, 1 to most + 1 tokens more, is some other step's: ignored)."""
        entry = self._open.pop(request_id, None)
        if entry is not None:
            self._count(request_id, entry, num_tokens)

    def _count(self, request_id: str, entry: tuple[int, int, int], num_tokens: int) -> None:
        before, output, most = entry
        if not before < num_tokens <= before + most + 1:
            return
        counts = self._live.setdefault(request_id, [0, 0, 0])
        counts[0] += 1
        counts[1] += num_tokens - before
        counts[2] = output + num_tokens - before

    def finish(self, request_id: str) -> None:
        """The request left: its open round counted from its live list, then it joins the sample
        after `MIN_ROUNDS` drafted rounds, with its output length from that list."""
        entry, view = self._open.pop(request_id, None), self._views.pop(request_id, None)
        prompt = self._prompt.pop(request_id, None)
        if entry is not None and view is not None:
            self._count(request_id, entry, known_tokens(view))
        counts = self._live.pop(request_id, None)
        if counts is None or counts[0] < MIN_ROUNDS:
            return
        rounds, emitted, output = counts
        if view is not None and prompt is not None:
            output = max(output, known_tokens(view) - prompt)
        self._sample.append((output, output * rounds / emitted))
        self._joined += 1
        if self._stale():
            self._joined = 0
            self._factors.clear()

    def _stale(self) -> bool:
        """Whether the sample grew by an eighth (at least one request) since the factors were drawn."""
        return self._joined >= max(1, len(self._sample) // 8)

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
        for _ in range(min(max(DRAWS[0], 4096 // batch), DRAWS[1])):
            drawn = rng.choices(sample, k=batch)
            plain_s += _drain(sorted(length for length, _ in drawn), steps)
            drafted_s += _drain(sorted(need for _, need in drawn), rounds)
        value = min(1.0, plain_s / drafted_s / (mean * steps[batch] / rounds[batch]))
        if not self._factors:   # the first factor drawn from this sample: its growth counts from here
            self._joined = 0
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
