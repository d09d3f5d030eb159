# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""ContextFeed: the target features a DSpark drafter reads, into its context cache.

Every step the engine reports the target features of the positions it committed
(`deepinfer_core.Proposer.observe_step`). They are projected into the drafter's per-request
context at once, or, while drafting is paused, kept in a `PendingContext` and projected in one
batch when drafting resumes (`flush`). A request whose context has a gap (steps whose features
the proposer declined: `deepinfer_core.Proposer.wants_features`) can never be drafted for again:
it is remembered in `gapped`, nothing past the gap is projected, and its rows are not buffered.
A recompute from an earlier position (a preempted request) that closes the gap makes it
draftable again.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from deepinfer_dspark.draft_runner import DSparkDraftRunner
from deepinfer_dspark.pending_context import PendingContext


class ContextFeed:
    """Projects or buffers a drafter's context features.

    Args:
        runner: the drafter with its per-request context caches.
        defer: buffer the features while paused (True) instead of projecting them every step.

    Attributes:
        pending: the features buffered while paused.
        gapped: ids of requests whose context has a gap (dropped by `remove`).
    """

    def __init__(self, runner: DSparkDraftRunner, defer: bool = True) -> None:
        self.runner = runner
        self.defer = defer
        self.pending = PendingContext()
        self.gapped: set[str] = set()

    def buffers(self, paused: bool) -> bool:
        """Whether a step's features are buffered now: while paused, and until the buffer is
        flushed (so positions stay in order)."""
        return self.defer and (paused or len(self.pending) > 0)

    def add_items(self, items: Sequence[tuple[str, Sequence[int], torch.Tensor]], paused: bool) -> None:
        """One step's features as `(request_id, positions, features [n, A])` items."""
        if not self.buffers(paused):
            self.project(items)
            return
        if self.gapped:
            items = [item for item in items if self._keeps(item[0], item[1][0] if len(item[1]) else 0)]
        self.pending.add(items)
        if self.pending.full:
            self.flush()

    def add_step(self, request_ids: list[str], first_positions: list[int], counts: list[int],
                 row_starts: list[int], features: torch.Tensor, paused: bool) -> None:
        """One step's features unsliced (`deepinfer_core.Proposer.observe_step`): buffered with
        one append, or projected with one row gather."""
        if self.buffers(paused):
            if not self.pending.holds:   # a buffer starts: positions past those held have a gap
                self._find_gaps(request_ids, first_positions)
            if self.gapped:   # their rows could never be projected: not kept
                keep = [i for i, rid in enumerate(request_ids) if self._keeps(rid, first_positions[i])]
                if not keep:
                    return
                if len(keep) < len(request_ids):
                    request_ids, first_positions, counts, row_starts = (
                        [values[i] for i in keep] for values in (request_ids, first_positions, counts, row_starts))
            self.pending.add_step(request_ids, first_positions, counts, row_starts, features)
            if self.pending.full:
                self.flush()
            return
        items, rows = [], []
        for rid, first, n, row in zip(request_ids, first_positions, counts, row_starts):
            held = self.runner.num_positions(rid)
            if first > held:   # a gap (steps without features): this request is never drafted again
                self.gapped.add(rid)
                continue
            skip = held - first   # held already (a recomputed preemption; it may close a gap)
            if n > skip:
                if self.gapped:
                    self.gapped.discard(rid)
                items.append((rid, range(first + skip, first + n)))
                rows.extend(range(row + skip, row + n))
        if items:   # one row gather for the step (none when the rows are the step's first ones, in order)
            same = rows[-1] == len(rows) - 1 and rows == list(range(len(rows)))
            kept = features[:len(rows)] if same else features.index_select(0, _index(rows, features.device))
            self.runner.observe_rows(items, kept)

    def flush(self) -> None:
        """Projects everything buffered (one `observe_batch`); requests found with a gap join
        `gapped`."""
        items = self.pending.take(self.runner.num_positions)
        self.gapped.update(self.pending.gapped)
        if items:
            self.runner.observe_batch([(r, p, f.to(self.runner.drafter.dtype)) for r, p, f in items])

    def project(self, items: Sequence[tuple[str, Sequence[int], torch.Tensor]]) -> None:
        """Projects items now: positions already held are skipped; a request whose first new
        position lies past its held ones joins `gapped` instead."""
        batch = []
        for request_id, positions, features in items:
            held = self.runner.num_positions(request_id)
            keep = [i for i, p in enumerate(positions) if p >= held]
            if keep and positions[keep[0]] > held:   # a gap: never drafted again
                self.gapped.add(request_id)
            elif keep:
                self.gapped.discard(request_id)   # (a recompute may close a gap)
                batch.append((request_id, list(positions[keep[0]:]),
                              features[keep[0]:].to(self.runner.drafter.dtype)))
        if batch:
            self.runner.observe_batch(batch)

    def _find_gaps(self, request_ids: list[str], first_positions: list[int]) -> None:
        """Requests whose first row lies past their held positions join `gapped` (the rows
        between were never kept: steps whose features were declined), as `add_step` finds them
        when it projects. Checked when a buffer starts only (no rows buffered can bridge the gap
        then): a buffer otherwise learnt of the gap at its flush and kept every row until then
        (session 30's helper, H200 closed loop at 32: features kept 500-800 steps a call)."""
        for rid, first in zip(request_ids, first_positions):
            if rid not in self.gapped and first > self.runner.num_positions(rid):
                self.gapped.add(rid)

    def _keeps(self, request_id: str, first: int) -> bool:
        """Whether to buffer a request's rows starting at `first`: not for a gapped request,
        unless they start at or before its held positions (a recompute that may close the gap;
        the next flush finds out)."""
        if request_id not in self.gapped:
            return True
        if first > self.runner.num_positions(request_id):
            return False
        self.gapped.discard(request_id)
        return True

    def remove(self, request_id: str) -> None:
        """Forgets a finished request's buffered rows and gap."""
        self.gapped.discard(request_id)
        self.pending.drop(request_id)


def _index(values: list[int], device: torch.device) -> torch.Tensor:
    """An int64 index tensor on `device`; on CUDA through pinned memory, non-blocking (a pageable
    copy would wait for the kernels already queued)."""
    host = torch.tensor(values, dtype=torch.int64)
    if device.type != "cuda":
        return host.to(device)
    return host.pin_memory().to(device, non_blocking=True)
