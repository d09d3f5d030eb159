# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Stragglers: what share of a draining batch's drafted gain its last request to finish keeps.

When the engine only drains the requests it holds (`LLM.generate`: `draining(True)`) and none
waits, a call ends with its last reply, and a drafted round costs about the same whether it serves
8 requests or the one still running. A round's expected gain counts every request's accepted
drafts, but the call is shortened only by those of the request that finishes last: with requests
of output length L_i that emit t_i tokens per drafted round, plain decoding takes max_i L_i steps
and drafting max_i (L_i / t_i) rounds (at equal costs; `factor` charges each stretch at the
requests left, `_expected_drains`, so the cheaper rounds of a drained batch's tail win part of it back).
`factor(B)` takes batches of B drawn (with replacement) from the finished requests and divides plain
decoding's expected time over drafting's by what the round-weighted mean sum L_i / sum (L_i / t_i)
would read (the rounds' expected accepted drafts estimate that mean), at most 1. The expectations
are exact (`_expected_drains`): a drained batch's time is the integral over its steps of a step's cost
at the requests still running, and at the sample's i-th smallest need v_i the running count is
Binomial(B, share of the sample needing v_i or more). Until session 64 they were estimated from 32-512
random batches, ~1-5 ms of Python a factor, drawn again on the step after a request finished (the
sample grew, or the batch reached another size): on the H100 at 8 requests a plain step where a
request finished ran 2-6 ms instead of ~1 in the calls that drafted. On the H200 (session 40, 8 requests in
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
round is counted from the list too). Device-free (CPU float64 tensors); the
factors are computed again once the sample has grown by an eighth since (`_stale`).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence

import torch

from deepinfer_dspark.batch_tail import known_tokens
from deepinfer_dspark.frontier import Frontier
from deepinfer_dspark.run_noise import RoundSpread, run_factor

MIN_ROUNDS = 4      # drafted rounds a finished request needs to join the sample (fewer: t_i is noise)
MIN_SAMPLE = 8      # finished requests in the sample before the factor departs from 1 (H200, session 41:
# with 16, the default's sample held 9-11 after 2, 8 and 32 requests, as it drafted little, and never acted)
SAMPLE = 256        # the last finished requests kept


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
        self._running: dict[tuple[int, int], torch.Tensor] = {}   # (sample size, B) -> `running_counts`
        self._joined = 0                               # requests joined since the factors were computed
        self.spread = RoundSpread()                    # every request-round's tokens (`run_factor`)
        self.frontier: Frontier | None = None          # the least advanced request's share (`judge_frontier`)

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

    def begin(self, rounds: list[tuple[str, int, int, int]], now: int = 0) -> None:
        """A drafted round: `(request id, tokens before it (prompt + output), output tokens before
        it, the most drafts it may accept)` per request asked. A request not committed by the next
        `begin` (nor finished) counts nothing for that round. `now`: the engine rounds seen (the
        `frontier`'s clock, when there is one)."""
        self._open = {rid: (before, output, most) for rid, before, output, most in rounds}
        if self.frontier is not None:
            self.frontier.begin([(rid, before, most) for rid, before, _, most in rounds], now)

    def commit(self, request_id: str, num_tokens: int) -> None:
        """The request holds `num_tokens` tokens after the round's verification (a count outside
        the round's reach, 1 to most + 1 tokens more, is some other step's: ignored)."""
        entry = self._open.pop(request_id, None)
        if entry is not None:
            self._count(request_id, entry, num_tokens)
        if self.frontier is not None:
            self.frontier.commit(request_id, num_tokens)

    def _count(self, request_id: str, entry: tuple[int, int, int], num_tokens: int) -> None:
        before, output, most = entry
        if not before < num_tokens <= before + most + 1:
            return
        counts = self._live.setdefault(request_id, [0, 0, 0])
        self.spread.add(num_tokens - before)
        counts[0] += 1
        counts[1] += num_tokens - before
        counts[2] = output + num_tokens - before

    def finish(self, request_id: str) -> None:
        """The request left: its open round counted from its live list, then it joins the sample
        after `MIN_ROUNDS` drafted rounds, with its output length from that list."""
        entry, view = self._open.pop(request_id, None), self._views.pop(request_id, None)
        prompt = self._prompt.pop(request_id, None)
        if self.frontier is not None:
            self.frontier.finish(request_id)
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
        """Whether the sample grew by an eighth (at least one request) since the factors were computed."""
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
        lengths, needs = (sorted(column) for column in zip(*self._sample))
        mean = sum(lengths) / sum(needs)
        steps = [0.0] + [self._plain(b) for b in range(1, batch + 1)]
        rounds = [0.0] + [self._drafted(b) for b in range(1, batch + 1)]
        plain_s, drafted_s = _expected_drains([lengths, needs], [steps, rounds],
                                              self._running_counts(len(lengths), batch))
        value = min(1.0, plain_s / drafted_s / (mean * steps[batch] / rounds[batch]))
        if not self._factors:   # the first factor computed from this sample: its growth counts from here
            self._joined = 0
        self._factors[batch] = value
        return value

    def run_factor(self, batch: int, request_ids, rounds: float, tokens: float) -> float:
        """`run_noise.run_factor` for a run of `rounds` more drafted rounds of the `batch` requests
        `request_ids` (each request's drafted rounds so far counted from its commits, the fewest
        taken over those still tracked: a round judged late, `overlap_bookkeeping`, may name a
        request that has finished since, and its own commits may be counted already), a request
        judged to gain `tokens` a round."""
        alive = [self._live[rid][0] if rid in self._live else 0 for rid in request_ids if rid in self._views]
        before = min(alive, default=0)
        return run_factor(batch, tokens, self.spread, before, rounds)

    def _running_counts(self, size: int, batch: int) -> torch.Tensor:
        """`running_counts(size, batch)`, kept while the sample's size holds (it only grows, to `SAMPLE`)."""
        key = (size, batch)
        if key not in self._running:
            if any(held != size for held, _ in self._running):
                self._running.clear()
            self._running[key] = running_counts(size, batch)
        return self._running[key]


def running_counts(size: int, batch: int) -> torch.Tensor:
    """`[size, batch + 1]` float64: entry [i, k], the probability that exactly k of `batch` draws
    (with replacement, uniform over a sample of `size` items in the caller's order) fall on items
    i..size-1, a share (size - i) / size: the Binomial(batch, (size - i) / size) pmf at k."""
    k = torch.arange(batch + 1, dtype=torch.float64)
    share = torch.arange(size, 0, -1, dtype=torch.float64).div_(size).unsqueeze(1)   # [size, 1], 1 first
    log_choose = (math.lgamma(batch + 1.0) - torch.lgamma(k + 1.0) - torch.lgamma(batch - k + 1.0))
    log_pmf = log_choose + k * share.log() + (batch - k) * torch.log1p(-share)   # row 0: (batch - k) * -inf
    log_pmf[0] = float("-inf")   # share 1: every draw, k = batch (0 * -inf would read nan)
    log_pmf[0, batch] = 0.0
    return log_pmf.exp_()


def _expected_drains(needs: list[list[float]], costs: list[list[float]], running: torch.Tensor) -> list[float]:
    """Expected seconds to drain a batch drawn from a sample, once per row r: `needs[r]`, the
    sample's `size` requests' steps (ascending), `costs[r]`, `batch + 1` seconds a step at b
    requests (`[0]` unused: nothing running costs nothing), `running` = `running_counts(size,
    batch)`. Between the (i-1)-th and the i-th smallest need every drawn request needing v_i or
    more runs, k of them with probability `running[i, k]`, so the expectation sums (v_i - v_(i-1))
    times the expected cost of a step at that count. Returns one float (seconds) per row."""
    values = torch.tensor(needs, dtype=torch.float64)
    gaps = torch.diff(values, dim=1, prepend=values.new_zeros(len(needs), 1))
    cost = torch.tensor(costs, dtype=torch.float64)
    cost[:, 0] = 0.0
    return ((running @ cost.T).T * gaps).sum(dim=1).tolist()
