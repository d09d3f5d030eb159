# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Frontier: how far a drafted round moves a batch's least advanced request, against the mean.

A draining batch (`LLM.generate`: nothing joins) ends with its last reply. When the replies run
to the same length (most of them hit `max_tokens`), the request that ends last is the one that
has accepted the fewest drafts so far: the least advanced, the batch's frontier. A drafted round
moves the frontier by min_i(n_i + t_i) - min_i(n_i) tokens (n_i a request's tokens before the
round, t_i what the round gave it), where the round is judged by the mean request's t_i. Summed
over consecutive rounds the frontier's steps add up to its whole move (the minimum of the sums),
so the ratio of the two sums over a bucket's rounds is what a draining batch keeps of the mean
request's gain while its least advanced request decides when it ends.

Measured on the GPUs' step logs (`bench_dspark.py --step-log`, the `reply` column: the least
advanced request's output length; `benchmarks/frontier_share.py`, session 80, BENCHMARKS.md): fixed-7
at 8 requests, its steps at 8 running requests moved the frontier 0.57 of the mean request (H100,
408 steps) and 0.51 (H200, 46), at 5-7 0.64-0.65, at 4 0.82; at 1 request 0.99 (the request is the
frontier). The default's own drafted steps at 5-8 running read 0.45-0.86, where the straggler factor
it judged them with (`Stragglers.factor`, from per-request means over whole replies) read 0.82-0.86.

A per-round ratio is pessimistic twice over: where the replies' lengths differ (a short reply may
hold the frontier, then finish) and early in a batch, where the least advanced request falls
behind the mean fastest (for independent rounds its deficit grows as the square root of the rounds:
a batch's first rounds carry most of it, yet the ratio prices it into every round at their
bucket). In `sim_engine_calls.py --frontier` (H100 profiles, replies 70% capped) it moved 8
requests from 0.959 to 0.992 of plain decoding at an acceptance where fixed-7 reads 0.846 there,
and cost 5-7 points at 2 and 4 requests, where drafting wins (1.092 / 1.042 -> 1.019 / 0.992).

`begin` opens a round with each request's tokens before it; `commit` gives a request's tokens after
it; `finish` drops a request that left. The round is closed at the next `begin`: every request still
running must have committed (else the round is no sample: its verification lags), and at least two
(one request is its own frontier). A bucket's sums decay by `DECAY` a sample, and their weight
halves every `AGE_ROUNDS` engine rounds without a sample (`ratio`'s `now`), so a load ruled out on
old evidence is judged towards 1 again: `PRIOR` mean tokens at a ratio of 1 always count.
Device-free.
"""

from __future__ import annotations

from deepinfer_dspark.pause_ledger import ledger_bucket

MIN_SAMPLES = 8      # closed rounds at a bucket before `ratio` reads anything
DECAY = 0.98         # each sample's weight relative to the next one's (~50 rounds of memory)
AGE_ROUNDS = 2048    # engine rounds over which a bucket's evidence halves without new samples
PRIOR = 4.0          # mean tokens a round (one round's worth) counted at a ratio of 1


class Frontier:
    """Per ledger bucket, the least advanced request's tokens per drafted round over the mean
    request's (see the module docstring). Fed by `Stragglers`."""

    def __init__(self) -> None:
        self._before: dict[str, int] = {}   # the open round: id -> tokens before it
        self._after: dict[str, int] = {}    # id -> tokens after it (committed)
        self._bucket = 0
        self._sums: dict[int, list[float]] = {}   # bucket -> [frontier tokens, mean tokens, samples, last round]
        self._now = 0

    def begin(self, rounds: list[tuple[str, int]], now: int = 0) -> None:
        """A drafted round of `(request id, tokens before it)`; closes the round before.
        `now`: the engine rounds seen (for the ageing)."""
        self._close()
        self._now = now
        self._before = dict(rounds)
        self._after = {}
        self._bucket = ledger_bucket(len(self._before))

    def commit(self, request_id: str, num_tokens: int) -> None:
        """The request holds `num_tokens` tokens after the open round's verification (a count not
        above its tokens before the round is some other step's: ignored)."""
        before = self._before.get(request_id)
        if before is not None and num_tokens > before:
            self._after[request_id] = num_tokens

    def finish(self, request_id: str) -> None:
        """The request left: it no longer holds the frontier of the open round."""
        self._before.pop(request_id, None)
        self._after.pop(request_id, None)

    def _close(self) -> None:
        before, after = self._before, self._after
        if len(after) < 2 or len(after) != len(before):
            return
        mean = sum(after[rid] - before[rid] for rid in after) / len(after)
        front = min(after.values()) - min(before.values())
        sums = self._sums.setdefault(self._bucket, [0.0, 0.0, 0, 0])
        sums[0] = sums[0] * DECAY + front
        sums[1] = sums[1] * DECAY + mean
        sums[2] += 1
        sums[3] = self._now

    def samples(self, bucket: int) -> int:
        """Rounds closed at `bucket` so far."""
        sums = self._sums.get(bucket)
        return 0 if sums is None else int(sums[2])

    def ratio(self, bucket: int, now: int) -> float | None:
        """The frontier's tokens over the mean request's at `bucket`, in (0, 1]; None before
        `MIN_SAMPLES` rounds closed there. The evidence's weight halves every `AGE_ROUNDS` rounds
        since its last sample (`now`: the engine rounds seen), against `PRIOR` tokens at 1."""
        sums = self._sums.get(bucket)
        if sums is None or sums[2] < MIN_SAMPLES:
            return None
        weight = 0.5 ** (max(now - sums[3], 0) / AGE_ROUNDS)
        front, mean = weight * sums[0] + PRIOR, weight * sums[1] + PRIOR
        return min(1.0, max(front, 0.0) / mean)
