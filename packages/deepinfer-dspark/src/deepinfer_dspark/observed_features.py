# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""ObservedFeatures: how `DSparkProposer` takes the target's features of committed positions.

The engine hands each step's features (`deepinfer_core.Proposer.observe` / `observe_many` /
`observe_step`: `[rows, A]` tensors, A the drafter's feature width, one row per committed
position). They go to `ContextFeed` (`feed`): projected into the drafter's context at once, or,
while drafting is paused at the last batch (`_pause`), buffered in `pending` and projected in one
batch when drafting resumes (`defer_context`). Each step also tells `MeasuredRates` (`rates`)
whether it was a decode step (no prefill), for the step timing.

With `pre_flush`, the last step of a quiet stretch that runs to the end of its pause
(`quiet_rounds` declared it; a stretch cut short by the buffer's room is not counted, else each
step after it would flush) projects what is buffered. With asynchronous scheduling the engine
hands a step's features over right after launching it, so the flush's host work overlaps the
device's run of that step, where the round that resumes drafting would run it after waiting for
the token ids (without, the step has finished by then and the flush only moves). On the H100
(session 61, 8 requests) the rounds that flushed 136-256 buffered pairs took 1.4-3.9 ms more than
a drafted round without a flush (~3.7 ms); in session 62 a resumption (the round and the two steps
before it) took 9.0 ms with `pre_flush` against 10.6 without. `FlushCosts` then times only the
flushes left in resumed rounds (after no counted-down stretch), so the pause policy prices a
probe's overhead from fewer samples, or from `probe_overhead` alone: the default resumed 10 times
where it had 4 without `pre_flush` in the same traced calls. A stretch cut short (a finished
request changes the count) never reaches its last step, and one followed by no drafted round
(the pause extended) flushed early for nothing: the next buffer starts after it.

A mixin of `DSparkProposer`: it reads `feed`, `rates`, `num_tokens`, `_pause`, `_quiet_left`,
`pre_flush` and `pre_flushes`. Device work happens in `ContextFeed` only.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from deepinfer_dspark.pending_context import PendingContext


class ObservedFeatures:
    """The features half of `DSparkProposer` (see the module docstring)."""

    def observe(self, request_id: str, positions: Sequence[int], features: torch.Tensor) -> None:
        """Stores the context features of committed positions (ones already held are skipped,
        e.g. when a preempted request is recomputed)."""
        self.observe_many([(request_id, positions, features)])

    def observe_many(self, items: Sequence[tuple[str, Sequence[int], torch.Tensor]]) -> None:
        """`observe` for a whole step, with one batched context projection (deferred while
        drafting is paused: see `ContextFeed`)."""
        self.rates.observed(all(0 < len(p) <= 1 + self.num_tokens and p[0] > 0 for _, p, _ in items))   # no prefill
        self.feed.add_items(items, self._pause > 0)

    def observe_step(self, request_ids: list[str], first_positions: list[int], counts: list[int],
                     row_starts: list[int], features: torch.Tensor) -> None:
        """`observe_many` for a whole step's features unsliced (see `deepinfer_core.Proposer`):
        while drafting is paused the step is buffered with one append."""
        self.rates.observed(max(counts, default=0) <= 1 + self.num_tokens and min(first_positions, default=1) > 0)
        self.feed.add_step(request_ids, first_positions, counts, row_starts, features, self._pause > 0)
        if self._quiet_left > 0:   # a quiet stretch's steps counted down (`quiet_rounds`)
            self._quiet_left -= 1
            if not self._quiet_left and self.pre_flush and self.pending.holds:
                self.pre_flushes += 1
                self._flush()

    @property
    def defer_context(self) -> bool:
        """Whether features are buffered while paused (`ContextFeed.defer`)."""
        return self.feed.defer

    @defer_context.setter
    def defer_context(self, value: bool) -> None:
        self.feed.defer = value

    @property
    def pending(self) -> PendingContext:
        """The features buffered while paused (`ContextFeed.pending`)."""
        return self.feed.pending

    def _flush(self) -> None:
        self.feed.flush()
