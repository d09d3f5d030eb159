# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Persistent block tables: each running request keeps one row between steps.

A decode step usually adds no block to a request (one every `block_size` tokens), so rebuilding
every request's table each step costs O(batch x blocks) of host work for nothing. Here a request
owns a row from its first step until it finishes or is preempted; a step copies only the block ids
appended since the last one (or the whole row when the table was replaced or shortened), then
gathers the step's rows with one vectorised index. Device free (numpy).
"""

from __future__ import annotations

import numpy as np


class PersistentBlockTables:
    """Rows of block ids keyed by request id.

    Args:
        max_rows: most requests holding a row at once (the engine's `max_num_seqs`).
        max_blocks: row width (blocks of the longest sequence).

    Attributes:
        table: `[max_rows, max_blocks]` int64 block ids (stale beyond `num_blocks[row]`).
        num_blocks: `[max_rows]` valid entries per row.
        copied_blocks: block ids copied into the table so far (for tests and profiling).
    """

    def __init__(self, max_rows: int, max_blocks: int) -> None:
        if max_rows < 1 or max_blocks < 1:
            raise ValueError(f"max_rows, max_blocks: must be positive, got {max_rows}, {max_blocks}")
        self.table = np.zeros((max_rows, max_blocks), dtype=np.int64)
        self.num_blocks = np.zeros(max_rows, dtype=np.int64)
        self.row_of: dict[str, int] = {}
        self._free = list(range(max_rows - 1, -1, -1))
        self.copied_blocks = 0

    def sync(self, request_id: str, block_ids: list[int]) -> int:
        """Brings the request's row up to date with `block_ids`; returns the row.

        Raises:
            ValueError: more blocks than the row width, or no free row (the message names the field).
        """
        n = len(block_ids)
        if n > self.table.shape[1]:
            raise ValueError(f"block_ids: {n} blocks exceed the table width {self.table.shape[1]}")
        row = self.row_of.get(request_id)
        if row is None:
            if not self._free:
                raise ValueError(f"request_id: no free block-table row for {request_id!r} "
                                 f"({self.table.shape[0]} rows held)")
            row = self.row_of[request_id] = self._free.pop()
            self.num_blocks[row] = 0
        held = int(self.num_blocks[row])
        # Within a request's life its table only grows, or loses its tail (KV rollback after
        # rejected drafts) and grows again. Same last block: copy only the new tail; a shorter
        # table with the same last block keeps its prefix; anything else is rewritten.
        if held:
            if n >= held and self.table[row, held - 1] == block_ids[held - 1]:
                pass
            elif 0 < n < held and self.table[row, n - 1] == block_ids[n - 1]:
                held = n
            else:
                held = 0
        if n > held:
            self.table[row, held:n] = block_ids[held:]
            self.copied_blocks += n - held
        self.num_blocks[row] = n
        return row

    def release(self, request_id: str) -> None:
        """Frees the request's row (finished, aborted or preempted); unknown ids are ignored."""
        row = self.row_of.pop(request_id, None)
        if row is not None:
            self.num_blocks[row] = 0
            self._free.append(row)

    def gather(self, rows: list[int], width: int) -> np.ndarray:
        """`[len(rows), width]` int64 block tables of the given rows, zero beyond each row's blocks."""
        out = self.table[np.asarray(rows, dtype=np.int64), :width].copy()
        out[np.arange(width)[None, :] >= self.num_blocks[rows][:, None]] = 0
        return out
