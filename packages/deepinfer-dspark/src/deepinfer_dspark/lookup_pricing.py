# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""LookupPricing: how `LookupAssist` prices a prompt-lookup round, and which requests it takes
from DSpark (`loops`). A mixin: it reads the wrapper's `inner` (DSpark: `decode`, `num_tokens`),
`costs`, `classes`, `tail`, `prefer_loops`, `check_every`, `search_budget`, `_views`, `_prompt`,
`_now`, `_could` and `_matched`, and searches with its `_search`. Device-free."""

from __future__ import annotations

import math
from collections.abc import Sequence

from deepinfer_core.interfaces import DraftRequest

from deepinfer_dspark.batch_tail import tail_weights

LOOP_CLASS = 2       # the match class of text caught in a loop (`MatchClasses`: 4n tokens or more)
LOOP_SHARE = 0.7     # its accepted share from which `loops` takes a request from DSpark


class LookupPricing:
    """The pricing half of `LookupAssist` (see the module docstring)."""

    def loops(self, requests: Sequence[DraftRequest], batch: int) -> set[str]:
        """The requests of a round DSpark would draft whose text is caught in a loop: their
        suffix matches earlier text over `LOOP_CLASS` lengths and that class's accepted share is
        at least `LOOP_SHARE` (empty unless `prefer_loops`). `LookupAssist.propose` gives them
        lookup drafts instead of asking DSpark: in a loop the earlier text is the draft, and a
        round of lookup drafts costs no drafter forward (the H200's step logs of session 42 at 1
        request: lookup rounds of 7 drafts 2.2-2.7 ms, DSpark's 2.7-3.3; in one call with a looping
        reply DSpark drafting ran 1.43x plain decoding where lookup drafting ran 2.26x). Decided
        from each request's known tokens and earlier rounds only, so lossless."""
        if not self.prefer_loops or not self._could_pay(batch) or self.classes.rate(LOOP_CLASS) < LOOP_SHARE:
            return set()
        self._search(batch, [r.request_id for r in requests])
        taken = {r.request_id: min(r.max_tokens, self._matched[r.request_id][0]) for r in requests
                 if self._matched.get(r.request_id, (0, -1))[1] == LOOP_CLASS and r.max_tokens > 0}
        if len(taken) == len(requests) and not self.pays(   # a round of lookup drafts alone must pay
                batch, self._priced_drafts(batch, {rid: (n, LOOP_CLASS) for rid, n in taken.items()}),
                self._now.in_run):
            return set()   # (else it would carry no drafts where DSpark drafts: session 43's review)
        return set(taken)

    def _could_pay(self, batch: int) -> bool:
        """Whether a lookup round of k drafts, all accepted, for one request pays at `batch`
        (memoized: it reads the decode profile only)."""
        could = self._could.get(batch)
        if could is None:
            could = self._could[batch] = batch >= 1 and self.pays(batch, [(self.inner.num_tokens, 1.0)])
        return could

    def _every(self, batch: int) -> int:
        """Tokens a request grows between two searches at `batch` requests: `check_every`, or
        ceil(batch / `search_budget`) where more (a step then searches ~`search_budget` requests)."""
        return max(self.check_every, math.ceil(batch / self.search_budget))

    def _priced_drafts(self, batch: int, matched: dict[str, tuple[int, int]]) -> list[tuple[int, float]]:
        """(drafts, expected accepted share) for `pays`, from request -> (drafts, match class),
        each share weighed by `_tail`."""
        tail = self._tail(batch)
        return [(drafts, self.classes.rate(cls) * tail.get(rid, 1.0)) for rid, (drafts, cls) in matched.items()]

    def _tail(self, batch: int) -> dict[str, float]:
        """In a batch's tail (no request waits: every request tracked runs), the weight of each
        running request's accepted drafts: a call then ends when its last reply does, so tokens a
        request gains ahead of the others mostly leave its slot idle later. The H200's step log
        (session 30, 8 requests, batch form) read 0.32 of the steps `pays` counted as saved.
        A request counts fully while its output leads the least advanced one's by at most
        `TAIL_SLACK` tokens, and `TAIL_AHEAD` beyond. Empty (all weigh 1) while requests wait.
        `lookup_replay.py --batch-form` (session 30): 1.182 -> 1.195 at 2 requests, 1.005 ->
        1.042 at 4; the closed loop with the engine's own cap unchanged (1.235 / 1.177 -> 1.234 /
        1.179). But a server whose clients cap their concurrency has no queue either, and there
        it cost 1.235 / 1.177 -> 1.195 / 1.123 (session 30's review helper): so only while the
        engine says it is `draining` (`LLM.generate`: no request is added until it returns)."""
        return tail_weights(self._views, self._prompt, batch, self.tail and self._now.draining)

    def pays(self, batch: int, drafts: list[tuple[int, float]], in_run: bool = False) -> bool:
        """Whether a lookup round at `batch` requests, with `(drafts, accepted share)` for each
        request that has them, emits more tokens per second than plain decoding: (batch + the
        expected accepted drafts) / batch tokens per plain step's worth, against the round's
        cost in plain steps: the decode profile read at batch + sum(drafts) rows (an upper bound:
        verifying a draft costs at most a request's decode step) plus `costs.priced(batch,
        in_run)` 1-request steps (`RoundCosts`: a round after a plain step waits for it, one in a
        run does not; `in_run`: the step before carried drafts). Without a profile: 1 + those
        plain steps."""
        extra = sum(length for length, _ in drafts)
        gain = (batch + sum(length * rate for length, rate in drafts)) / batch
        over = self.costs.priced(batch, in_run)
        decode = self.inner.decode
        if decode is None:
            return gain > 1.0 + over
        step = 1.0 / decode.at(batch)
        cost = (1.0 / decode.at(batch + extra) + over / decode.at(1)) / step
        return gain > cost
