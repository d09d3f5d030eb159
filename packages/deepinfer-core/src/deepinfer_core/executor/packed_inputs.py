# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Packed graph inputs: a CUDA graph's static inputs as one byte buffer, filled on the host in one pass.

A step that replays a CUDA graph (a decode step, `cuda_graph.DecodeGraphs`; a verification step,
`verify_graph.VerifyGraphs`) needs its token ids, positions, slot mapping, sequence lengths and
block tables in the graph's static buffers. Built the general way (`prepare_inputs` into fresh
device tensors, then the buffers' `load`: copies, fills and index copies, and for a decode step
the placeholder ids gathered from the previous step's samples) that is ~25-35 torch calls a step
on the CPU (`benchmarks/packed_decode.py --inputs-only`), more on CUDA (pinning, copies, views).
On the GPU machines' slow hosts a torch call costs ~15-30 us: an H100's phase traces (session 74
of packages/deepinfer-dspark/BENCHMARKS.md) put the forward's launch at a median 0.83 ms of a
1.2 ms decode step at 8 requests while the host waited a median ~0.01 ms a step for the device:
two steps in three were host-bound.

`StepLayout` lays every static input out in one byte buffer (16-byte aligned sections, the block
table last) and `pack_step` writes a step's chunks into a host copy of it (`StepStage`) with numpy
alone; `upload` copies its prefix to the device in one copy through pinned memory and gathers the
placeholder ids on the device (`fill_index` / `fill_rows`: the chunks whose last token is still
on the device, padded with distinct scratch rows of `input_ids` past the graph's rows).
`EngineConfig.packed_graph_inputs` turns it on.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

ALIGN = 16   # bytes: Triton specialises kernels on pointer alignment
MAX_UPLOAD = 256 << 10   # bytes: a step whose padded rows need more (block tables `size x width` int32) takes
# the general path, whose block-table copy grows with the columns used instead (the pinned copy of 256 KiB: ~50 us
# on a slow host)
_TORCH = {np.int64: torch.int64, np.int32: torch.int32}


class StepLayout:
    """Byte offsets of a graph's static inputs: `max_batch` requests (M) of `query_len` tokens (Q)
    and `width` block-table columns.

    Sections (dtype, elements): `input_ids` int64 `[2 * M * Q]` (the graph's `[M * Q]`, then scratch
    rows), `positions`, `slot_mapping`, `rows` int64 `[M * Q]` (`rows`: a step's real tokens' rows in
    the padded layout, in order), `fill_index`, `fill_rows` int64 `[M]`, `seq_lens` int32 `[M]`,
    `cu_seqlens_q` int32 `[M + 1]` (0, Q, 2Q, ...), then `block_tables` int32 `[M, width]`; each at an
    offset aligned to `ALIGN` bytes.

    Attributes:
        offsets: section name -> (byte offset, numpy dtype, elements).
        nbytes: the whole buffer.
    """

    def __init__(self, max_batch: int, width: int, query_len: int = 1) -> None:
        if max_batch < 1 or width < 1 or query_len < 1:
            raise ValueError(f"max_batch, width, query_len: must be positive, got {max_batch}, {width}, {query_len}")
        self.max_batch, self.width, self.query_len = max_batch, width, query_len
        tokens = max_batch * query_len
        sections = (("input_ids", np.int64, 2 * tokens), ("positions", np.int64, tokens),
                    ("slot_mapping", np.int64, tokens), ("rows", np.int64, tokens), ("fill_index", np.int64, max_batch),
                    ("fill_rows", np.int64, max_batch), ("seq_lens", np.int32, max_batch),
                    ("cu_seqlens_q", np.int32, max_batch + 1), ("block_tables", np.int32, max_batch * width))
        self.offsets: dict[str, tuple[int, type, int]] = {}
        total = 0
        for name, dtype, count in sections:
            self.offsets[name] = (total, dtype, count)
            total += -(-count * np.dtype(dtype).itemsize // ALIGN) * ALIGN
        self.nbytes = total

    def prefix(self, size: int) -> int:
        """Bytes from the start through row `size` of the block table: what a step padded to
        `size` requests needs copied (every other section whole)."""
        offset, _, _ = self.offsets["block_tables"]
        return offset + size * self.width * 4

    def views(self, buffer):
        """Typed views of `buffer` (a uint8 numpy array or torch tensor of `nbytes`) by section;
        `block_tables` as `[M, width]`."""
        out = {}
        for name, (offset, dtype, count) in self.offsets.items():
            part = buffer[offset:offset + count * np.dtype(dtype).itemsize]
            out[name] = part.view(dtype) if isinstance(buffer, np.ndarray) else part.view(_TORCH[dtype])
        out["block_tables"] = out["block_tables"].reshape(self.max_batch, self.width)
        return out


class StepStage:
    """The host copy of a `StepLayout` buffer (pageable numpy: `upload` pins a copy of its prefix
    each step, so it may be rewritten as soon as that returns), with its start values: every row
    padding (token 0, position 0, slot -1, sequence length Q, block-table row of zeros), the fill
    entries at distinct scratch rows reading row 0."""

    def __init__(self, layout: StepLayout) -> None:
        self.layout = layout
        self.buffer = np.zeros(layout.nbytes, dtype=np.uint8)
        self.views = layout.views(self.buffer)
        m, q = layout.max_batch, layout.query_len
        self.views["cu_seqlens_q"][:] = np.arange(0, m * q + 1, q, dtype=np.int32)
        self.views["slot_mapping"][:] = -1
        self.views["seq_lens"][:] = q
        self.scratch = np.arange(m * q, m * q + m, dtype=np.int64)   # fill padding: a distinct scratch row each
        self.views["fill_index"][:] = self.scratch
        self.row_cols = np.zeros(m, dtype=np.int64)   # per block-table row: leading columns that may be nonzero


def pack_step(chunks: Sequence, stage: StepStage, size: int, block_size: int, num_blocks: int, tables,
              fill_rows_available: int | None) -> tuple[int, int]:
    """Writes a step's chunks into `stage` as `prepare_inputs` then the buffers' `load` would lay
    them out: chunk b's n_b <= Q tokens in rows `b * Q .. b * Q + n_b - 1` at positions
    `start_b + i`, its sequence length `start_b + Q` (the padding raises it: see
    `verify_graph`; `start_b + 1` for decode steps, Q = 1), requests past the chunks up to `size`
    padding, and `rows` the real tokens' rows in order.

    Args:
        chunks: `ScheduledChunk`s of at most Q tokens, each with a `request_id` (`tables` keys rows by it).
        stage: the host buffer to fill.
        size: the captured batch size the step replays (>= len(chunks), <= max_batch).
        block_size: S, tokens per KV block.
        num_blocks: size of the KV pool; every block id must be in `[0, num_blocks)`.
        tables: the runner's `PersistentBlockTables` (synced here, as `prepare_inputs` syncs it).
        fill_rows_available: rows of the previous step's sampled ids (`fill_from`), None without them.

    Returns:
        (F, T): the chunks whose last token is a placeholder (`fill_row >= 0`; entries `[:F]` of
        `fill_index` / `fill_rows` are theirs) and the step's tokens (entries `[:T]` of `rows`).

    Raises:
        ValueError: as `prepare_inputs` for the same chunks (a negative `start_pos`, a block table
            too short for the chunk or naming a block outside the pool, named with the chunk
            index), a placeholder without `fill_from` (names `fill_from`), or a `fill_row` past
            its rows (names `fill_row`).
    """
    batch, layout, v = len(chunks), stage.layout, stage.views
    q = layout.query_len
    lens = np.fromiter((len(c.token_ids) for c in chunks), dtype=np.int64, count=batch)
    starts = np.fromiter((c.start_pos for c in chunks), dtype=np.int64, count=batch)
    n_blocks = np.fromiter((len(c.block_ids) for c in chunks), dtype=np.int64, count=batch)
    for bad, message in ((starts < 0, "start_pos: chunk {i} has negative start_pos {s}"),
                         (n_blocks * block_size < starts + lens,
                          "block_ids: chunk {i} has {b} blocks of {S}, too few for {L} tokens")):
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(message.format(i=i, s=starts[i], b=n_blocks[i], S=block_size, L=starts[i] + lens[i]))
    rows = np.fromiter((tables.sync(c.request_id, c.block_ids) for c in chunks), dtype=np.int64, count=batch)
    width = min(layout.width, tables.table.shape[1], int(n_blocks.max()))   # (the columns this step uses)
    table = tables.table[rows, :width]
    valid = np.arange(width)[None, :] < n_blocks[:, None]
    outside = valid & ((table < 0) | (table >= num_blocks))
    if outside.any():
        i = int(np.argmax(outside.any(axis=1)))
        raise ValueError(f"block_ids: chunk {i} names a block outside [0, {num_blocks})")
    filled = [(i, c.fill_row) for i, c in enumerate(chunks) if c.fill_row >= 0]
    if filled and fill_rows_available is None:
        raise ValueError("fill_from: chunks have placeholder tokens (fill_row) but no source ids")
    for i, row in filled:
        if row >= fill_rows_available:
            raise ValueError(f"fill_row: chunk {i} reads row {row} of {fill_rows_available} sampled ids")
    _pack_tables(stage, table, valid, n_blocks, batch, size)
    # Token rows: every row of the padded requests first padding, then the real tokens scattered.
    count = int(lens.sum())
    owner = np.repeat(np.arange(batch), lens)
    offset = np.arange(count) - np.repeat(np.cumsum(lens) - lens, lens)
    positions = starts[owner] + offset
    padded = size * q
    v["input_ids"][:padded] = 0
    v["positions"][:padded] = 0
    v["slot_mapping"][:padded] = -1
    at = owner * q + offset
    v["input_ids"][at] = np.fromiter((t for c in chunks for t in c.token_ids), dtype=np.int64, count=count)
    v["positions"][at] = positions
    v["slot_mapping"][at] = table[owner, positions // block_size] * block_size + positions % block_size
    v["rows"][:count] = at
    v["seq_lens"][:batch] = starts + q
    v["seq_lens"][batch:size] = q
    if filled:
        index, source = zip(*filled)
        v["fill_index"][:len(filled)] = [i * q + int(lens[i]) - 1 for i in index]
        v["fill_rows"][:len(filled)] = source
    v["fill_index"][len(filled):] = stage.scratch[len(filled):]
    v["fill_rows"][len(filled):] = 0
    return len(filled), count


def _pack_tables(stage: StepStage, table: np.ndarray, valid: np.ndarray, n_blocks: np.ndarray, batch: int,
                 size: int) -> None:
    """Block-table rows `[:size]`: the chunks' tables (zero past each one's blocks) and padded rows
    of zeros. Only the columns this step uses are written (host work grows with batch x the longest
    table, not batch x width); columns a row held before past them are zeroed."""
    cols = int(n_blocks.max())
    bt, held = stage.views["block_tables"], stage.row_cols
    bt[:batch, :cols] = np.where(valid[:, :cols], table[:, :cols], 0)
    wider = int(held[:batch].max())
    if wider > cols:
        bt[:batch, cols:wider] = 0
    held[:batch] = cols
    if size > batch:
        padded = int(held[batch:size].max())
        if padded:
            bt[batch:size, :padded] = 0
            held[batch:size] = 0


class PackedInputs:
    """A graph's static inputs on `device` (views of one byte buffer laid out by `StepLayout`) and
    their host stage; `upload` fills them for one step.

    Args:
        max_batch, width, query_len: the layout's (`StepLayout`).
        device: where the buffers live.

    Attributes:
        flat: the device buffer (uint8); `views`: its sections by name (`StepLayout.views`).
    """

    def __init__(self, max_batch: int, width: int, query_len: int, device: torch.device | str) -> None:
        self.layout = StepLayout(max_batch, width, query_len)
        self.stage = StepStage(self.layout)
        self.flat = torch.from_numpy(self.stage.buffer.copy()).to(device)   # the stage's start values (a copy)
        self.views = self.layout.views(self.flat)
        self._prefix: dict[int, torch.Tensor] = {}   # size -> the device bytes `upload` copies
        self._rows: dict[int, torch.Tensor] = {}     # tokens -> the view of `rows` over them

    def upload(self, chunks: Sequence, size: int, block_size: int, num_blocks: int, tables,
               fill_from: torch.Tensor | None = None) -> torch.Tensor:
        """Packs the step (`pack_step`), copies the buffer's prefix to the device in one copy
        (pinned on CUDA: it never waits for queued kernels) and gathers the placeholder ids from
        `fill_from` on the device.

        Returns:
            `[T]` int64 on the device: the real tokens' rows in the padded layout, in order (a view
            of the `rows` section: valid until the next upload).

        Raises:
            ValueError: as `pack_step`, or more chunks than `size` or `size` past `max_batch`.
        """
        if len(chunks) > size or size > self.layout.max_batch:
            raise ValueError(f"step: batch {len(chunks)} does not fit size {size} of {self.layout.max_batch}")
        filled, count = pack_step(chunks, self.stage, size, block_size, num_blocks, tables,
                                  None if fill_from is None else fill_from.shape[0])
        nbytes = self.layout.prefix(size)
        target = self._prefix.get(size)
        if target is None:
            target = self._prefix[size] = self.flat[:nbytes]
        source = torch.from_numpy(self.stage.buffer[:nbytes])
        if target.device.type == "cuda":
            target.copy_(source.pin_memory(), non_blocking=True)
        else:
            target.copy_(source)
        if filled:
            v = self.views
            ids = fill_from.index_select(0, v["fill_rows"])
            v["input_ids"].index_copy_(0, v["fill_index"], ids if ids.dtype == torch.int64 else ids.long())
        rows = self._rows.get(count)
        if rows is None:
            rows = self._rows[count] = self.views["rows"][:count]
        return rows
