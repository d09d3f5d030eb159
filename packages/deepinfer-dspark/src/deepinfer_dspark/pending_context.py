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

from array import array
from collections.abc import Callable, Sequence

import torch


FEW_PAIRS = 512   # below this many buffered (request, step) pairs `take` splits them in Python


class PendingContext:
    """Buffered observations in arrival order, merged per request on `take`.

    Every observation is kept as a step: `(request ids, first positions, counts, row starts,
    features [rows, A])`, request i owning rows `row_starts[i] : row_starts[i] + counts[i]` at
    positions `first_positions[i], ...`. `take` joins all buffered features once and gathers each
    request's rows with one `index_select`, so a flush costs a few tensor ops plus Python work per
    (request, step), not a tensor slice per (request, step).

    Args:
        max_rows: buffered rows (all requests) from which `full` turns True (the caller then
            flushes).
        max_bytes: buffered feature bytes from which `full` turns True: the bound on the memory
            held (256 MiB: 46,603 rows of SmolLM2-135M's five bf16 feature layers, 5,461 of a
            target with three 8,192-wide layers). Fewer, larger flushes cost less per row. The
            bytes counted are those of the features given (a view's rows, not its whole base).

    Raises:
        ValueError: `max_rows` or `max_bytes` not an int >= 1 (names it).
    """

    def __init__(self, max_rows: int = 65536, max_bytes: int = 256 << 20) -> None:
        for name, value in (("max_rows", max_rows), ("max_bytes", max_bytes)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: must be an int >= 1, got {value!r}")
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self._bytes = 0
        self._steps: list[tuple[list[str], list[int], list[int], list[int], torch.Tensor]] = []
        self._dropped: dict[str, int] = {}   # id -> buffered steps when it finished (an id may come back)
        self._item_rows: dict[str, int] = {}  # id -> rows added by `add` since its last drop
        self._rows = 0
        self._live: set[str] = set()   # ids with rows buffered since their last drop
        self.pairs = 0   # buffered (request, step) pairs, finished requests' included: `take` walks them all
        self.gapped: list[str] = []   # after `take`: ids with buffered rows past a missing position

    def __len__(self) -> int:
        return self._rows

    @property
    def holds(self) -> bool:
        """Whether any step is buffered (possibly with no rows left to project while a request with
        buffered rows is still running: `take` frees it)."""
        return bool(self._steps)

    @property
    def full(self) -> bool:
        return self._rows >= self.max_rows or self._bytes >= self.max_bytes

    def rounds_before_full(self, rows_per_round: int) -> int:
        """Rounds of `rows_per_round` rows each that can be added without `full` turning True,
        bytes judged by the rows buffered so far (none buffered: 1, the first round tells)."""
        if rows_per_round < 1:
            return 0
        rounds = (self.max_rows - self._rows - 1) // rows_per_round
        if self._rows:
            row_bytes = self._bytes / self._rows
            rounds = min(rounds, int((self.max_bytes - self._bytes - 1) // (row_bytes * rows_per_round)))
        else:
            rounds = min(rounds, 1)
        return max(rounds, 0)

    def add(self, items: Sequence[tuple[str, Sequence[int], torch.Tensor]]) -> None:
        """Keeps a step's observations (features `[n, A]`, one row per position).

        Raises:
            ValueError: an item's features do not have one row per position (names `features`).
        """
        items = [(request_id, list(positions), features) for request_id, positions, features in items]
        for request_id, positions, features in items:   # all checked before any state changes
            if features.shape[0] != len(positions):
                raise ValueError(f"features: {features.shape[0]} rows for {len(positions)} positions "
                                 f"of request {request_id!r}")
        ids, firsts, counts, starts, parts, row = [], [], [], [], [], 0
        for request_id, positions, features in items:
            for lo, hi in _contiguous_runs(positions):
                ids.append(request_id)
                firsts.append(positions[lo])
                counts.append(hi - lo)
                starts.append(row + lo)
            if positions:
                parts.append(features)
                row += len(positions)
                self._item_rows[request_id] = self._item_rows.get(request_id, 0) + len(positions)
        if parts:
            self.add_step(ids, firsts, counts, starts, torch.cat(parts) if len(parts) > 1 else parts[0])

    def add_step(self, request_ids: list[str], first_positions: list[int], counts: list[int],
                 row_starts: list[int], features: torch.Tensor) -> None:
        """Keeps a whole step's observations unsliced (see `deepinfer_core.Proposer.observe_step`):
        one append, whatever the number of requests; they are split per request in `take`."""
        self._steps.append((request_ids, first_positions, counts, row_starts, features))
        self._live.update(request_ids)
        self.pairs += len(request_ids)
        self._rows += sum(counts)
        self._bytes += features.numel() * features.element_size()   # held until `take`, drops or not

    def drop(self, request_id: str) -> None:
        """Forgets a request's buffered rows (it finished or was aborted). Rows given by `add`
        stop counting at once; rows of `add_step` steps count towards `full` until `take`, or
        until every request with buffered rows is dropped: then the buffer is emptied at once.
        (Across the batches of an offline run the finished requests' rows otherwise piled up to
        `full`, and the flush that followed walked them all: ~40 ms of host time at 256 requests
        on this repository's CPU machine.)"""
        self._rows -= self._item_rows.pop(request_id, 0)
        if self._steps:
            self._dropped[request_id] = len(self._steps)
        self._live.discard(request_id)
        if not self._live:
            self._clear()

    def clear(self) -> None:
        """Forgets every buffered step (e.g. the requests' contexts will have a gap anyway)."""
        self._clear()

    def _clear(self) -> None:
        self._steps, self._dropped = [], {}
        self._item_rows.clear()
        self._live.clear()
        self._rows = self._bytes = self.pairs = 0

    def take(self, held: Callable[[str], int]) -> list[tuple[str, list[int], torch.Tensor]]:
        """Empties the buffer into one item per request: positions `held(id), held(id) + 1, ...`.

        Rows before `held(id)` (already projected) and repeated positions (a preempted request
        recomputed) are dropped, the first copy kept; the run stops at the first missing
        position. When every request's buffered rows continue one another from `held(id)` (the
        usual case: no recompute, no gap) and at least `FEW_PAIRS` (request, step) pairs are
        buffered, the split is computed with a few tensor ops over all pairs at once
        (`_take_runs`); otherwise pair by pair in Python (the split alone, on this repository's CPU
        machine: 0.05 against 0.5 ms for 16 pairs, 2.2 against 2.1 ms for 1,000, 10 against 6 ms
        for 12,800).

        A request with buffered rows past a missing position (its context has a gap: steps whose
        features were declined) is listed in `gapped` (its rows up to the gap, if any, are still
        projected); the tensor path drops a request whose rows all lie past a gap itself.

        Returns:
            `(request_id, positions, features [n, A])` items for `observe_batch`.
        """
        steps, dropped, pairs = self._steps, self._dropped, self.pairs
        self._clear()
        self.gapped = []
        if not steps:
            return []
        # Few pairs: pair by pair in Python (~2 us a pair) beats the tensor ops' fixed ~0.45 ms.
        runs, index, gapped = _take_runs(steps, dropped, held) if pairs >= FEW_PAIRS else (None, None, [])
        if runs is None:
            runs, index, gapped = _take_runs_slow(steps, dropped, held)
        self.gapped = gapped
        if not runs:
            return []
        joined = torch.cat([s[4] for s in steps]) if len(steps) > 1 else steps[0][4]
        if joined.device.type == "cuda":   # pinned and non-blocking: a pageable copy waits for the queued kernels
            index = index.pin_memory().to(joined.device, non_blocking=True)
        gathered = joined.index_select(0, index.to(joined.device))
        out, offset = [], 0
        for request_id, start, n in runs:
            out.append((request_id, list(range(start, start + n)), gathered[offset:offset + n]))
            offset += n
        return out


Runs = list[tuple[str, int, int]]   # (request id, first position, count), in first-arrival order


def _take_runs(steps: list, dropped: dict[str, int], held: Callable[[str], int]
               ) -> tuple[Runs | None, torch.Tensor | None, list[str]]:
    """`take`'s runs, joined-row index and gapped ids when every request's kept rows continue
    one another from `held(id)`, or all lie past a gap after it (dropped, listed in the ids);
    `(None, None, [])` otherwise (the caller then takes the slow path)."""
    ids, firsts, counts, starts, numbers, bases, sizes, base = [], [], [], [], [], [], [], 0
    for number, (request_ids, step_firsts, step_counts, step_starts, features) in enumerate(steps):
        ids += request_ids
        firsts += step_firsts
        counts += step_counts
        starts += step_starts
        numbers.append(number)
        bases.append(base)
        sizes.append(len(request_ids))
        base += features.shape[0]
    names = list(dict.fromkeys(ids))
    codes = dict(zip(names, range(len(names))))
    code = _int64(list(map(codes.__getitem__, ids)))
    per_step = _int64(sizes)
    number = _int64(numbers).repeat_interleave(per_step)
    first = _int64(firsts)
    count = _int64(counts)
    row = _int64(starts) + _int64(bases).repeat_interleave(per_step)
    since = torch.tensor([dropped.get(r, 0) for r in names], dtype=torch.int64)
    start = torch.tensor([held(r) for r in names], dtype=torch.int64)
    skip = (start[code] - first).clamp(min=0)
    live = (count > 0) & (number >= since[code])                 # rows observed since the request (re)started
    # Renumber the requests by the arrival of their first live pair (the slow path's order).
    arrival = torch.full((len(names),), code.numel(), dtype=torch.int64).scatter_reduce_(
        0, code[live], torch.arange(code.numel())[live], reduce="amin")
    keep = live & (count > skip)                                 # and not projected already
    code, first, count, row, skip = code[keep], first[keep], count[keep], row[keep], skip[keep]
    if not code.numel():
        return [], torch.zeros(0, dtype=torch.int64), []
    by_arrival = torch.argsort(arrival)
    names = [names[i] for i in by_arrival.tolist()]
    start = start[by_arrival]
    code = torch.argsort(by_arrival)[code]
    order = torch.sort(code, stable=True).indices                # each request's pairs, in arrival order
    code, first, count, row = code[order], first[order] + skip[order], count[order] - skip[order], row[order] + skip[order]
    lead = torch.ones_like(code, dtype=torch.bool)
    lead[1:] = code[1:] != code[:-1]
    # A request whose lowest kept position lies past `held` has a gap before all its rows (a later
    # lead past `held` may still be filled by a recompute: the check below sends it to the slow path).
    big = torch.iinfo(torch.int64).max
    lowest = torch.full((len(names),), big, dtype=torch.int64).scatter_reduce_(0, code, first, reduce="amin")
    late = (lowest > start) & (lowest != big)
    gapped = [names[c] for c in late.nonzero().flatten().tolist()]
    if gapped:
        on = ~late[code]
        code, first, count, row, lead = code[on], first[on], count[on], row[on], lead[on]
    expected = torch.where(lead, start[code], torch.roll(first + count, 1))
    if not bool((first == expected).all()):                      # a gap later on, a repeat or a recompute
        return None, None, []
    total = int(count.sum())
    offsets = torch.cumsum(count, 0) - count
    index = row.repeat_interleave(count) + torch.arange(total) - offsets.repeat_interleave(count)
    lengths = torch.zeros(len(names), dtype=torch.int64).index_add_(0, code, count)
    runs = [(names[c], int(start[c]), int(n)) for c, n in enumerate(lengths.tolist()) if n]
    return runs, index, gapped


def _int64(values: list[int]) -> torch.Tensor:
    """`torch.tensor(values, dtype=torch.int64)`, ~3.5x faster for long lists (through an
    `array`; a flush at 128 requests joins ~10^4 (request, step) pairs)."""
    if not values:
        return torch.zeros(0, dtype=torch.int64)
    return torch.frombuffer(array("q", values), dtype=torch.int64)


def _take_runs_slow(steps: list, dropped: dict[str, int], held: Callable[[str], int]
                    ) -> tuple[Runs, torch.Tensor, list[str]]:
    """`_take_runs` pair by pair, for any arrival pattern (restarts, repeats, gaps)."""
    segments: dict[str, list[tuple[int, int, int]]] = {}   # id -> (first position, count, joined row)
    base = 0
    for number, (request_ids, firsts, counts, starts, features) in enumerate(steps):
        for request_id, first, n, row in zip(request_ids, firsts, counts, starts):
            if n and number >= dropped.get(request_id, 0):   # else observed before its request ended
                segments.setdefault(request_id, []).append((first, n, base + row))
        base += features.shape[0]
    index: list[int] = []
    runs, gapped = [], []
    for request_id, segs in segments.items():
        start = held(request_id)
        rows = _first_copies(segs, start)
        if rows:
            runs.append((request_id, start, len(rows)))
            index.extend(rows)
        if any(first + n > start + len(rows) for first, n, _ in segs):   # rows past a missing position
            gapped.append(request_id)
    return runs, torch.tensor(index, dtype=torch.int64), gapped


def _contiguous_runs(positions: list[int]) -> list[tuple[int, int]]:
    """`[lo, hi)` index ranges of `positions` whose values go up by one."""
    runs, lo = [], 0
    for i in range(1, len(positions) + 1):
        if i == len(positions) or positions[i] != positions[i - 1] + 1:
            runs.append((lo, i))
            lo = i
    return runs


def _first_copies(segments: list[tuple[int, int, int]], start: int) -> list[int]:
    """Joined rows of positions `start, start + 1, ...` (each from the first segment, in order,
    that holds it) up to the first position no segment holds.

    Args:
        segments: `(first position, count, first joined row)` in arrival order.
    """
    rows: list[int] = []
    expected = start
    for first, n, row in segments:
        if first + n <= expected:        # held already, or a repeat of rows taken
            continue
        if first > expected:             # a gap so far: a later segment may fill it
            return _first_copies_slow(segments, start)
        rows.extend(range(row + expected - first, row + n))
        expected = first + n
    return rows


def _first_copies_slow(segments: list[tuple[int, int, int]], start: int) -> list[int]:
    """`_first_copies` position by position (segments out of order)."""
    first_row: dict[int, int] = {}
    for first, n, row in segments:
        for i in range(n):
            if first + i >= start:
                first_row.setdefault(first + i, row + i)
    rows = []
    while start + len(rows) in first_row:
        rows.append(first_row[start + len(rows)])
    return rows
