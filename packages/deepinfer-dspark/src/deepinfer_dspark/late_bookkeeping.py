# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""LateBookkeeping: a drafted round's bookkeeping done while the next round's drafter runs.

A verifying step runs synchronously: after the verification the host commits the round, asks
`idle_rounds`, then `propose` launches the drafter's forward and waits for its tokens (the
round's one sync), prices them (`schedule_round`) and judges the round (`_plan_pause`); the device
idles while the host prices and judges. On the H200 (session 45) confidence scheduling at 1
request drafted 717 of 720 rounds with fixed-7's acceptance and still ran 4-7% below fixed-7: its
drafted rounds took 2.84-2.90 ms at the median against 2.70-2.76, and on the CPU its extra host
work came to +156 / +242 us a drafted step (`engine_host_cost.py`), spread over `_plan_pause`,
the commits' folding into `AcceptanceRatio` / `FullAcceptance`, and `idle_rounds`' bounds.

With `overlap_bookkeeping`, that work moves into the next drafted round's device time (the
`while_running` hook of `DSparkDraftRunner.draft`, between the graph's replay and the copy of its
tokens to the host): a round's `_plan_pause` waits (`_late`), the commits are kept unfolded
(`commit` only reads the accepted count, for `OpeningPhase`), and the next round's draft folds
them and judges the round while the drafter runs, then prices `idle_rounds`' bounds for the next
step at that batch (`_verdict`). Only rounds inside a run of drafted rounds wait: the first drafted
round after one without drafts (a probe after a pause, most often) is judged at once, so a losing
probe pauses at once instead of drafting one more losing round (the engine tests' backoff: 2, 4, 8
rounds between lone probes, as without the option). A round continues a run only when one of its
requests drafted in the round before (a new batch after the last one ended in a stop token starts
a run of its own: what its predecessor left waiting is settled before it drafts).
The step log's `judged` (the benchmarks') then describes the previous drafted round. A run that
turns to losing drafts one more round, and its loss, judged while the bucket is already paused,
doubles the backoff once more than without the option (a longer pause where drafting lost twice).
A round that does not draft settles at its end (`_settle`); `idle_round`, the dormant and quiet
stretches settle first. Every decision is made one round later than without the option, from
earlier rounds only (it governs the round after the next), so verification stays lossless. A mixin
of `DSparkProposer`: it reads its `acceptance`, `openings`, `_last_batch`, `cannot_pay`,
`expected_loss` and `_plan_pause`. Device-free.
"""

from __future__ import annotations

from collections.abc import Collection


class LateBookkeeping:
    """The deferred half of `DSparkProposer`'s bookkeeping (see the module docstring).

    Attributes:
        overlap_bookkeeping: defer a drafted round's judgement and commits into the next round's
            draft (False here: done at once, as until session 46; True by default in the engine's
            factory since session 46: on the H200 +4.3 points at 1 request over six processes,
            +0.8 at 2, +0.5 at 8, BENCHMARKS.md forty-second session).
    """

    overlap_bookkeeping: bool = False
    _late: tuple[tuple | None, list[tuple[str, int]]] | None = None   # (`_plan_pause` args, commits)
    _verdict: tuple[int, bool, bool] | None = None   # (batch, `cannot_pay`, `expected_loss`), priced late
    _in_run = False   # the last round drafted (a round drafted now continues a run)
    _run_ids: frozenset[str] = frozenset()   # the requests it drafted for

    def _judge_round(self, plan: tuple, in_run: bool) -> None:
        """Judges a drafted round (`plan`: `_plan_pause`'s expected, lengths, batch, partial and
        opening, then the round's request ids): at once, or with `overlap_bookkeeping` and
        `in_run` (the round before it drafted too) in the next round's draft (its commits then
        wait with it)."""
        if self.overlap_bookkeeping and in_run:
            self._late = (plan, [])
        else:
            self._plan(plan)
            self._verdict = None   # (priced during the draft, before this judgement: price live)

    def _plan(self, plan: tuple) -> None:
        expected, lengths, batch, partial, opening, ids = plan
        self._plan_pause(expected, lengths, batch, partial=partial, opening=opening, ids=ids)
        self._grant_lease(plan)   # (`DraftingLease`)

    def _commit_round(self, request_id: str, num_tokens: int) -> int:
        """`AcceptanceRatio.commit`, kept for the next settle while a round's bookkeeping waits;
        returns the request's accepted drafts either way."""
        if self._late is None:
            return self.acceptance.commit(request_id, num_tokens)
        self._late[1].append((request_id, num_tokens))
        return self.acceptance.accepted(request_id, num_tokens)

    def _settle(self, run_over: bool = True) -> None:
        """Runs what waits (the round's judgement, then its commits) and closes the acceptance's
        open round (`AcceptanceRatio.close`); the bounds priced for the next step are dropped.
        `run_over`: no round is being drafted (a run of drafted rounds has ended; so has a lease,
        `DraftingLease`)."""
        late, self._late, self._verdict = self._late, None, None
        self._in_run = self._in_run and not run_over
        self._open_lean_round()   # (`DraftingLease`: a lean round is opened late too)
        try:
            if late is not None and late[0] is not None:
                self._plan(late[0])
        finally:   # (a judgement that raises still leaves the round's evidence folded and closed)
            for request_id, num_tokens in () if late is None else late[1]:
                self.acceptance.commit(request_id, num_tokens)
            self.acceptance.close()
            if run_over:   # (`DraftingLease`: a lease ends with its run, also one the judgement renewed)
                self._lease = None

    def _continues_run(self, request_ids: Collection[str]) -> bool:
        """Whether a round drafting for `request_ids` continues the last run of drafted rounds (one
        of them drafted in the round before); if not, what waits is settled first."""
        if self._in_run and not self._run_ids.isdisjoint(request_ids):
            return True
        if self._late is not None:
            self._settle()
        return False

    def _overlapped(self) -> None:
        """The `while_running` hook of a drafted round: settles the last round and prices the
        next step's bounds at this batch (`idle_rounds` reads them once)."""
        self._settle(run_over=False)
        batch = self._last_batch
        self._verdict = (batch, self.cannot_pay(batch), self.expected_loss(batch))

    def _bounds(self, batch: int) -> tuple[bool | None, bool | None]:
        """`(cannot_pay, expected_loss)` at `batch` as the last drafted round priced them, once;
        `(None, None)` when not priced there (the caller computes them)."""
        verdict, self._verdict = self._verdict, None
        if verdict is None or verdict[0] != batch:
            return None, None
        return verdict[1], verdict[2]

    def _forget_commit(self, request_id: str) -> None:
        """Before the request leaves: its waiting commit, if any, is folded now (as without the
        option, where the commit came first)."""
        if self._late is None:
            return
        self._open_lean_round()
        kept = [c for c in self._late[1] if c[0] != request_id]
        if len(kept) < len(self._late[1]):
            for c in self._late[1]:
                if c[0] == request_id:
                    self.acceptance.commit(*c)
            self._late = (self._late[0], kept)
