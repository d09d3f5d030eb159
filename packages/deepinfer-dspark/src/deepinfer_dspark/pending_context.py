# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""PendingContext: target features observed while drafting is paused, projected later in one go.

While the proposer skips drafting (speculation does not pay at the current load), the drafter
needs no context: its K/V projections of the committed tokens are only read when it drafts
again. Projecting every step anyway costs a few eager kernels a step, a large share of a
graph-replayed decode step on a small model. So the features are kept as they arrive and, when
drafting resumes, each request's rows are merged into one run of positions and projected by
one batched `DSparkDraftRunner.observe_batch`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch


class PendingContext:
    """Buffered `(request_id, positions, features)` observations, merged per request on `take`.

    Args:
        max_rows: buffered rows (all requests) above which `full` turns True (the caller then
            flushes: a bound on the memory held).
    """

    def __init__(self, max_rows: int = 16384) -> None:
        self.max_rows = max_rows
        self._items: dict[str, list[tuple[list[int], torch.Tensor]]] = {}
        self._steps: list[tuple[list[str], list[int], list[int], list[int], torch.Tensor]] = []
        self._dropped: dict[str, int] = {}   # id -> buffered steps when it finished (an id may come back)
        self._rows = 0

    def __len__(self) -> int:
        return self._rows

    @property
    def full(self) -> bool:
        return self._rows >= self.max_rows

    def add(self, items: Sequence[tuple[str, Sequence[int], torch.Tensor]]) -> None:
        """Keeps a step's observations (features `[n, A]`, one row per position)."""
        for request_id, positions, features in items:
            if len(positions):
                self._items.setdefault(request_id, []).append((list(positions), features))
                self._rows += len(positions)

    def add_step(self, request_ids: list[str], first_positions: list[int], counts: list[int],
                 row_starts: list[int], features: torch.Tensor) -> None:
        """Keeps a whole step's observations unsliced (see `deepinfer_core.Proposer.observe_step`):
        one append, whatever the number of requests; they are split per request in `take`."""
        self._steps.append((request_ids, first_positions, counts, row_starts, features))
        self._rows += sum(counts)

    def drop(self, request_id: str) -> None:
        """Forgets a request's buffered rows (it finished or was aborted); its rows in buffered
        steps are skipped when they are split (they count towards `full` until then)."""
        for positions, _ in self._items.pop(request_id, []):
            self._rows -= len(positions)
        if self._steps:
            self._dropped[request_id] = len(self._steps)

    def _expand(self) -> None:
        """Splits the buffered steps into per-request rows (`add`'s layout)."""
        steps, self._steps = self._steps, []
        dropped, self._dropped = self._dropped, {}
        for number, (request_ids, firsts, counts, starts, features) in enumerate(steps):
            for request_id, first, n, row in zip(request_ids, firsts, counts, starts):
                if number < dropped.get(request_id, 0):   # observed before its request ended
                    self._rows -= n
                elif n:
                    self._items.setdefault(request_id, []).append((list(range(first, first + n)), features[row:row + n]))

    def take(self, held: Callable[[str], int]) -> list[tuple[str, list[int], torch.Tensor]]:
        """Empties the buffer into one item per request: positions `held(id), held(id) + 1, ...`.

        Rows before `held(id)` (already projected) and repeated positions (a preempted request
        recomputed) are dropped, the first copy kept; the run stops at the first missing
        position.

        Returns:
            `(request_id, positions, features [n, A])` items for `observe_batch`.
        """
        self._expand()
        out = []
        for request_id, chunks in self._items.items():
            start = held(request_id)
            first_row: dict[int, tuple[int, int]] = {}
            for c, (positions, _) in enumerate(chunks):
                for i, p in enumerate(positions):
                    if p >= start and p not in first_row:
                        first_row[p] = (c, i)
            n = 0
            while start + n in first_row:
                n += 1
            if n:
                out.append((request_id, list(range(start, start + n)),
                            _gather(chunks, [first_row[start + j] for j in range(n)])))
        self._items.clear()
        self._rows = 0
        return out


def _gather(chunks: list[tuple[list[int], torch.Tensor]], rows: list[tuple[int, int]]) -> torch.Tensor:
    """Rows `(chunk, index)` in order, copied slice by slice (runs of one chunk are contiguous)."""
    parts, run_c, run_lo, run_hi = [], None, 0, 0
    for c, i in rows:
        if c == run_c and i == run_hi:
            run_hi += 1
            continue
        if run_c is not None:
            parts.append(chunks[run_c][1][run_lo:run_hi])
        run_c, run_lo, run_hi = c, i, i + 1
    parts.append(chunks[run_c][1][run_lo:run_hi])
    return torch.cat(parts)
