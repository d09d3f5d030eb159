# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""LookupAssist: prompt-lookup drafts where confidence-scheduled DSpark drafts nothing.

On the H200 (session 28, BENCHMARKS.md) three greedy replies of 16 at 1 request fell into a loop
past token 64 (the text repeating itself): fixed-7 accepted 0.86-1.00 of its drafts there, and
that was its 1.10x. Confidence scheduling never drafted there: its body rounds had settled below
plain decoding on the replies' first 64 tokens, the pause that followed declined the target
features, and a request with a gap in its drafter context is never drafted for again. Prompt
lookup (Saxena 2023) needs neither features nor a drafter, only the request's own tokens.

This wrapper reads each request's live tokens (`deepinfer_core.Proposer.track`) every
`check_every` tokens, also through dormant and quiet stretches (declared at most `check_every`
rounds long here, so the engine asks again), and while the last `min_n` tokens occurred earlier
(`ngram.latest_occurrence`) and such a round can pay (`pays`), it ends DSpark's pause for one
round: each request DSpark does not draft for gets the tokens that followed the earlier
occurrence, continued with its period (`ngram.continue_period`). A match is priced by how long it is (the suffix and the earlier text agree on
`n` tokens or more, extended backwards): text caught in a loop matches over whole periods and
its drafts are accepted, a short match in fresh text mostly is not, so each length class learns
its own accepted share (`MatchClasses`). They are verified like any draft, deterministic (one-hot q), so lossless at any
temperature; DSpark's own statistics never see them (its `commit` counts only the requests it
drafted). Everything else is DSpark's: attributes fall through to the wrapped proposer.
Device-free.
"""

from __future__ import annotations

from collections.abc import Sequence

from deepinfer_core.interfaces import Draft, DraftRequest

from deepinfer_dspark.ngram import continue_period, latest_occurrence

CHECK_EVERY = 8        # tokens a request grows between two searches of its context
SYNC_STEPS = 0.9       # plain 1-request steps a synchronous step costs the host (the H200's step
# log, session 20: a `propose` after an overlapped step cost 0.6-1 ms spikes; `sim_engine_calls.py
# --sync`); a lone lookup round pays it twice: waiting for the ids before it, and the next plain
# step, which has nothing in flight to overlap with
PRIOR_RATE, PRIOR_DRAFTS = 0.5, 4.0   # the accepted share of lookup drafts before any is verified
DECAY = 0.98                          # per lookup draft verified: newer text weighs more
LONGEST_MATCH = 64                    # tokens a match is extended backwards at most


class MatchClasses:
    """The accepted share of lookup drafts by the length m of the match behind them: m < 2n,
    2n <= m < 4n, m >= 4n (n = the shortest match). Each share is decayed (`DECAY` per draft
    verified) and starts at `PRIOR_RATE` over `PRIOR_DRAFTS` drafts."""

    def __init__(self, min_n: int) -> None:
        self.min_n = min_n
        self.sums = [[PRIOR_RATE * PRIOR_DRAFTS, PRIOR_DRAFTS] for _ in range(3)]

    def of(self, match: int) -> int:
        """The class of a match of `match` tokens."""
        return 0 if match < 2 * self.min_n else 1 if match < 4 * self.min_n else 2

    def rate(self, cls: int) -> float:
        accepted, verified = self.sums[cls]
        return accepted / verified

    def add(self, cls: int, drafts: int, accepted: int) -> None:
        weight = DECAY ** drafts
        accepted_sum, verified = self.sums[cls]
        self.sums[cls] = [accepted_sum * weight + accepted, verified * weight + drafts]


def match(ids: list[int], n: int, k: int) -> tuple[list[int], int]:
    """(`k` draft tokens, the match's length) from the latest earlier occurrence of the last `n`
    tokens of `ids` (`ngram.latest_occurrence`, continued with its period: `continue_period`).
    The length is `n` plus the tokens before both that agree, at most `LONGEST_MATCH`.
    ([], 0) without an occurrence."""
    start = latest_occurrence(ids, n)
    if start < 0:
        return [], 0
    length, here, there = n, start - 1, len(ids) - n - 1
    while length < LONGEST_MATCH and here >= 0 and ids[here] == ids[there]:
        length, here, there = length + 1, here - 1, there - 1
    return continue_period(ids, start, n, k), length


class LookupAssist:
    """A `DSparkProposer` (confidence scheduling) with prompt lookup where it drafts nothing.

    Args:
        inner: the proposer wrapped.
        min_n: tokens of the context's suffix that must have occurred before (>= 1).
        check_every: tokens between two searches of a request (>= 1).

    Raises:
        ValueError: `min_n` or `check_every` below 1 (named).
    """

    def __init__(self, inner, min_n: int, check_every: int = CHECK_EVERY) -> None:
        if min_n < 1:
            raise ValueError(f"speculative_config.prompt_lookup_min: must be >= 1, got {min_n}")
        if check_every < 1:
            raise ValueError(f"check_every: must be >= 1, got {check_every}")
        self.inner, self.min_n, self.check_every = inner, min_n, check_every
        self._views: dict[str, Sequence[int]] = {}
        self._prompt: dict[str, int] = {}      # tokens when tracked: the search starts past them
        self._checked: dict[str, int] = {}     # known tokens at the last search
        self._matched: dict[str, tuple[int, int]] = {}   # request -> (drafts, match class) last found
        self._recheck: set[str] = set()        # searched at the next chance (they just drafted)
        self._open: dict[str, tuple[int, int, int]] = {}   # lookup-drafted: (tokens before, drafts, class)
        self.classes = MatchClasses(min_n)
        self._override = False                 # DSpark was paused, this round drafts by lookup
        self.lookup_rounds = 0
        self.lookup_drafts = 0
        self.lookup_accepted = 0

    def __getattr__(self, name: str):
        return getattr(self.inner, name)   # (only for names not defined here)

    # --- the engine's calls -------------------------------------------------------------
    def track(self, request_id: str, token_ids: Sequence[int]) -> None:
        self._views[request_id] = token_ids
        self._prompt[request_id] = self._checked[request_id] = len(token_ids)

    def remove(self, request_id: str) -> None:
        for table in (self._views, self._prompt, self._checked, self._matched, self._open):
            table.pop(request_id, None)
        self._recheck.discard(request_id)
        self.inner.remove(request_id)

    def commit(self, request_id: str, num_tokens: int) -> None:
        self.inner.commit(request_id, num_tokens)
        opened = self._open.pop(request_id, None)
        if opened is not None:
            before, drafts, cls = opened
            accepted = min(max(num_tokens - before - 1, 0), drafts)
            self.lookup_accepted += accepted
            self.classes.add(cls, drafts, accepted)
            self._recheck.add(request_id)

    def idle_rounds(self) -> int:
        rounds = self.inner.idle_rounds()
        self._override = rounds > 0 and self._due(self.inner.batch)
        return 0 if self._override else rounds

    def dormant_rounds(self, num_requests: int) -> int:
        return self._stretch(self.inner.dormant_rounds(num_requests), num_requests)

    def quiet_rounds(self, num_requests: int) -> int:
        return self._stretch(self.inner.quiet_rounds(num_requests), num_requests)

    def propose(self, requests: list[DraftRequest]) -> list[Draft]:
        if self._override:   # DSpark is paused: its round is an idle one
            self._override = False
            self.inner.idle_round(len(requests))
            drafts = [Draft([]) for _ in requests]
        else:
            drafts = self.inner.propose(requests)
        looked = set()
        for i, r in enumerate(requests):
            if drafts[i].token_ids or r.request_id not in self._matched or r.max_tokens < 1:
                continue
            found, length = match(list(r.token_ids), self.min_n, r.max_tokens)
            if found:
                drafts[i] = Draft(found)
                self._open[r.request_id] = (len(r.token_ids), len(found), self.classes.of(length))
                self.lookup_drafts += len(found)
                looked.add(r.request_id)
        self.lookup_rounds += bool(looked)
        for request_id in [m for m in self._matched if m not in looked]:   # not asked (not eligible) or
            del self._matched[request_id]   # no longer matching: searched again once grown, not every round
        return drafts

    # --- decisions ----------------------------------------------------------------------
    def _stretch(self, rounds: int, num_requests: int) -> int:
        """A stretch DSpark declares, capped so the engine asks again within `check_every`
        rounds where a lookup round could pay, or none when one is due now."""
        if rounds <= 0 or not self._could_pay(num_requests):
            return rounds
        if self._due(num_requests):
            return 0
        return min(rounds, self.check_every)

    def _could_pay(self, batch: int) -> bool:
        """Whether a lookup round of k drafts, all accepted, for one request pays at `batch`."""
        return batch >= 1 and self.pays(batch, [(self.inner.num_tokens, 1.0)])

    def _due(self, batch: int) -> bool:
        """Whether a lookup round pays at `batch` requests: some running request's suffix
        occurred before (searched when it grew `check_every` tokens, or just drafted) and
        `pays` says yes. Nothing is searched where even a full lookup could not pay."""
        if not self._could_pay(batch):
            return False
        self._search(batch)
        if not self._matched:
            return False
        return self.pays(batch, [(drafts, self.classes.rate(cls)) for drafts, cls in self._matched.values()])

    def _search(self, batch: int) -> None:
        """Searches the decoding requests grown `check_every` tokens (or just drafted), oldest
        first, and stops after `batch` of them: requests are admitted first come, first served,
        so those are the running ones (a preempted one may take a place: it then goes unsearched
        for a while), and a long queue of waiting requests costs nothing."""
        decoding = 0
        for request_id, view in self._views.items():
            if decoding >= batch:
                break
            known = len(view)
            while known and view[known - 1] < 0:   # the in-flight step's placeholder
                known -= 1
            if known <= self._prompt[request_id]:   # not decoding yet (waiting)
                continue
            decoding += 1
            if known - self._checked[request_id] < self.check_every and request_id not in self._recheck:
                continue
            self._checked[request_id] = known
            found, length = match(list(view[:known]), self.min_n, self.inner.num_tokens)
            if found:
                self._matched[request_id] = (len(found), self.classes.of(length))
            else:
                self._matched.pop(request_id, None)
        self._recheck.clear()

    def pays(self, batch: int, drafts: list[tuple[int, float]]) -> bool:
        """Whether a lookup round at `batch` requests, with `(drafts, accepted share)` for each
        request that has them, emits more tokens per second than plain decoding: (batch + the
        expected accepted drafts) / batch tokens per plain step's worth, against
        the round's cost in plain steps, the decode profile read at batch + sum(lengths) rows
        (an upper bound: verifying a draft costs at most a request's decode step) plus twice
        `SYNC_STEPS` of the 1-request step (the ids it waits for, the overlap the next step
        loses; without a profile: 1 + 2 `SYNC_STEPS` plain steps). In `sim_engine_calls.py
        --closed --lookup` one sync priced made rounds at 8 requests that lost 1-2.5%."""
        extra = sum(length for length, _ in drafts)
        gain = (batch + sum(length * rate for length, rate in drafts)) / batch
        decode = self.inner.decode
        if decode is None:
            return gain > 1.0 + 2 * SYNC_STEPS
        step = 1.0 / decode.at(batch)
        cost = (1.0 / decode.at(batch + extra) + 2 * SYNC_STEPS / decode.at(1)) / step
        return gain > cost
