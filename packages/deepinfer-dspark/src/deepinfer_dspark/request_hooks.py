# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""RequestHooks: what `DSparkProposer` does when the engine reports on one request
(`deepinfer_core.Proposer`): `commit` after its verification, `track` when it starts, `draining`
for the whole batch, `remove` when it ends.

A mixin of `DSparkProposer`: it reads and updates the state the proposer and its other mixins keep
(`stragglers`, `drained`, `openings`, `acceptance`, `feed`, `runner`, `_lease`, `_lean_open`, ...).
Device-free itself (`runner.remove` frees the request's drafter context).
"""

from __future__ import annotations

from collections.abc import Sequence


class RequestHooks:
    """The per-request half of `DSparkProposer` (see the module docstring)."""

    def commit(self, request_id: str, num_tokens: int) -> None:
        """After a verification: the request's realized accepted drafts (`acceptance`). The
        context cache needs nothing: it only ever holds committed positions (see observe). A lean
        round's commit counts in its lease only (`DraftingLease`)."""
        if self._lean_open is not None and self._lean_commit(request_id, num_tokens):
            return
        self.openings.advanced(self._commit_round(request_id, num_tokens))
        if self.judge_stragglers:
            self.stragglers.commit(request_id, num_tokens)

    def track(self, request_id: str, token_ids: Sequence[int]) -> None:
        """The request's live token list (see `deepinfer_core.Proposer`): with `judge_stragglers`,
        its output length when it finishes and whether requests wait (`Stragglers`)."""
        if self.judge_stragglers:
            self.stragglers.track(request_id, token_ids)
        if self.drained is not None:   # (`PausePolicy.drained`)
            self.drained.track(request_id, token_ids, self.drafted_rounds)

    def draining(self, flag: bool) -> None:
        """The engine only drains the requests it holds (True, `LLM.generate`) or may be given more
        (False): while draining, rounds are judged by the batch's straggler (`Stragglers`), unless
        `judge_stragglers` is off."""
        self.draining_batch = bool(flag) and self.judge_stragglers
        if self.drained is not None:
            self.drained.draining(flag, self.rates.clock())   # (the clock the rates read)

    def remove(self, request_id: str) -> None:
        if self._lease is not None and request_id in self._lease.ids:
            self._end_lease()
        if self.judge_stragglers:
            self.stragglers.finish(request_id)
        self._forget_commit(request_id)
        self.acceptance.drop(request_id)
        self.feed.remove(request_id)
        self.runner.remove(request_id)
        if self.drained is not None and self.drained.finish(request_id, self.drafted_rounds, self.rates.clock()):
            self._lift_drained()

