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

Filed by run (`by_run`, the default). The least advanced request falls behind the mean most at a
run's start: for independent rounds its deficit grows as the square root of the rounds, so a run's
first rounds carry most of it, and a short run keeps least (the default's runs at 8 requests on the
H100, sessions 75-80: 0.31-0.57 of the mean request over runs of 1-7 rounds, 0.76 over runs of 8 or
more). A run is consecutive drafted rounds (`begin`'s `now` one more each); it is filed whole, as
its rounds' sums, at the bucket of its first round (where the decision to draft it was taken),
when a round begins that does not follow it. Filed round by round at each round's own bucket
(`by_run` False), a long run's first rounds at 8 running price its early deficit into every
round there: in `sim_engine_calls.py --frontier` (H100 profiles, replies 70% capped, p 0.9, where
drafting wins) that cost 4 and 8 requests 11-15 points (1.291 / 1.212 -> 1.144 / 1.096); by run
it costs nothing there (1.289 / 1.215) and moves 8 requests from 0.959 to 0.981 of plain decoding
at p 0.78, where fixed-7 reads 0.846 (the H200's 0.83; neutral at p 0.8, nearer the H100's 0.91),
within 2.5 points either way at 2 and 4 requests. Still pessimistic where the replies'
lengths differ: a short reply may hold the frontier, then finish.

`begin` opens a round with each request's tokens before it; `commit` gives a request's tokens after
it; `finish` drops a request that left. The round is closed at the next `begin`: a sample when at
least two requests still run (one request is its own frontier) and one of them committed (the
round was verified); one that did not verified no drafts and gained its step's token. Its bucket is
the requests asked, where the policy reads the requests running: they differ only in a round where
some request could not draft. A bucket's sums decay by `DECAY` a round, and their weight
halves every `AGE_ROUNDS` engine rounds without a sample (`ratio`'s `now`), so a load ruled out on
old evidence is judged towards 1 again: `PRIOR` mean tokens at a ratio of 1 always count.
Device-free.
"""

from __future__ import annotations

from deepinfer_dspark.pause_ledger import ledger_bucket

MIN_SAMPLES = 8      # rounds filed at a bucket before `ratio` reads anything
DECAY = 0.98         # each round's weight relative to the next one's (~50 rounds of memory)
AGE_ROUNDS = 2048    # engine rounds over which a bucket's evidence halves without new samples
PRIOR = 4.0          # mean tokens a round (one round's worth) counted at a ratio of 1


class Frontier:
    """Per ledger bucket, the least advanced request's tokens per drafted round over the mean
    request's (see the module docstring). Fed by `Stragglers`.

    Args:
        by_run: file each run of consecutive drafted rounds whole at the bucket it began at (True),
            or each round at its own bucket.
    """

    def __init__(self, by_run: bool = True) -> None:
        self.by_run = by_run
        self._before: dict[str, tuple[int, int]] = {}   # the open round: id -> (tokens before it, most drafts)
        self._after: dict[str, int] = {}    # id -> tokens after it (committed)
        self._bucket = 0
        self._sums: dict[int, list[float]] = {}   # bucket -> [frontier tokens, mean tokens, samples, last round]
        self._run = [0.0, 0.0, 0]           # the open run's [frontier tokens, mean tokens, samples]
        self._run_bucket = 0
        self.now = -2   # the engine rounds seen when the last round began (`begin`'s `now`)

    def begin(self, rounds: list[tuple[str, int, int]], now: int = 0) -> None:
        """A drafted round of `(request id, tokens before it, the most drafts it may accept)`;
        closes the round before. `now`: the engine rounds seen (for the ageing; with `by_run`, a
        round that does not follow the last one, `now` not one more than its, begins a new run)."""
        self._close()
        if self.by_run and now != self.now + 1:   # a new run: the last one is filed
            self._file_run()
            self._run_bucket = ledger_bucket(len(rounds))
        self.now = now
        self._before = {rid: (before, most) for rid, before, most in rounds}
        self._after = {}
        self._bucket = ledger_bucket(len(self._before))

    def commit(self, request_id: str, num_tokens: int) -> None:
        """The request holds `num_tokens` tokens after the open round's verification: its first
        commit within the round's reach (1 to most + 1 tokens more) counts; any other is some
        other step's (a prompt-lookup step's, say) and is ignored."""
        entry = self._before.get(request_id)
        if entry is not None and request_id not in self._after and entry[0] < num_tokens <= entry[0] + entry[1] + 1:
            self._after[request_id] = num_tokens

    def finish(self, request_id: str) -> None:
        """The request left: it no longer holds the frontier of the open round."""
        self._before.pop(request_id, None)
        self._after.pop(request_id, None)

    def _close(self) -> None:
        """Closes the open round: its frontier's and mean request's tokens go to its bucket, or
        with `by_run` to the open run. A request still running that did not commit verified no
        drafts (Algorithm 1 gave it none): it gained the step's one token."""
        before, after = self._before, self._after
        if len(before) < 2 or not after:
            return
        gained = {rid: after.get(rid, start + 1) for rid, (start, _) in before.items()}
        mean = sum(gained[rid] - start for rid, (start, _) in before.items()) / len(before)
        front = min(gained.values()) - min(start for start, _ in before.values())
        if self.by_run:
            self._run[0] += front
            self._run[1] += mean
            self._run[2] += 1
        else:
            self._add(self._bucket, front, mean, 1)

    def _file_run(self) -> None:
        """Files the open run at the bucket it began at, as one sample of its rounds."""
        front, mean, rounds = self._run
        if rounds:
            self._add(self._run_bucket, front, mean, int(rounds))
        self._run = [0.0, 0.0, 0]

    def _add(self, bucket: int, front: float, mean: float, rounds: int) -> None:
        """Adds `rounds` rounds' frontier and mean tokens to `bucket`'s sums (decayed per round)."""
        sums = self._sums.setdefault(bucket, [0.0, 0.0, 0, 0])
        decay = DECAY ** rounds
        sums[0] = sums[0] * decay + front
        sums[1] = sums[1] * decay + mean
        sums[2] += rounds
        sums[3] = self.now

    def samples(self, bucket: int) -> int:
        """Rounds filed at `bucket` so far (with `by_run`, of runs that ended)."""
        sums = self._sums.get(bucket)
        return 0 if sums is None else int(sums[2])

    def ratio(self, bucket: int, now: int) -> float | None:
        """The frontier's tokens over the mean request's at `bucket`, in (0, 1]; None before
        `MIN_SAMPLES` rounds were filed there. The evidence's weight halves every `AGE_ROUNDS` rounds
        since its last sample (`now`: the engine rounds seen), against `PRIOR` tokens at 1."""
        sums = self._sums.get(bucket)
        if sums is None or sums[2] < MIN_SAMPLES:
            return None
        weight = 0.5 ** (max(now - sums[3], 0) / AGE_ROUNDS)
        front, mean = weight * sums[0] + PRIOR, weight * sums[1] + PRIOR
        return min(1.0, max(front, 0.0) / mean)
