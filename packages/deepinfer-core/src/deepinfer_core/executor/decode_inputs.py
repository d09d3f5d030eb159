# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The decode graphs' static inputs as one byte buffer, filled on the host in one pass.

A decode step that replays a CUDA graph needs its token ids, positions, slot mapping, sequence
lengths and block tables in the graph's static buffers. Built the general way (`prepare_inputs`
into fresh device tensors, then `DecodeBuffers.load`'s copies and fills, then the placeholder
ids gathered from the previous step's samples) that is ~45 torch calls a step. On the GPU
machines' slow hosts a torch call costs ~15-30 us: an H100's phase traces (session 74 of
packages/deepinfer-dspark/BENCHMARKS.md) put the forward's launch at a median 0.83 ms of a 1.2 ms
step at 8 requests while the host waited ~0.01 ms a step for the device. The step is host-bound.

`DecodeLayout` lays every static input out in one byte buffer (16-byte aligned sections, the
block table last) and `pack_decode` writes a step of decode chunks into a host copy of it with
numpy alone. `DecodeBuffers.upload` then copies its prefix to the device in one copy and gathers
the placeholder ids on the device in two calls (`fill_index` / `fill_rows`: the step's rows whose
last token is still on the device, padded with distinct scratch rows of `input_ids` past
`max_batch`). Device-free here: only numpy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

ALIGN = 16   # bytes: Triton specialises kernels on pointer alignment
MAX_UPLOAD = 256 << 10   # bytes: a step whose padded rows need more (block tables `size x width` int32) takes
# the general path, whose block-table copy grows with the columns used instead (the pinned copy of 256 KiB: ~50 us
# on a slow host)

# (name, numpy dtype, rows in units of max_batch M: (scale, extra)) -> M * scale + extra elements
_SECTIONS = (
    ("input_ids", np.int64, 2, 0),      # [M] the graph's, then [M] scratch targets of padded fill entries
    ("positions", np.int64, 1, 0),
    ("slot_mapping", np.int64, 1, 0),
    ("fill_index", np.int64, 1, 0),     # rows of `input_ids` that take a sampled id (padding: scratch rows)
    ("fill_rows", np.int64, 1, 0),      # ... the previous step's sampled row each takes (padding: 0)
    ("seq_lens", np.int32, 1, 0),
    ("cu_seqlens_q", np.int32, 1, 1),   # 0, 1, ..., M (constant)
)


class DecodeLayout:
    """Byte offsets of the static decode inputs for `max_batch` rows and `width` block-table columns.

    Sections (dtype, elements): `input_ids` int64 `[2 * max_batch]`, `positions`, `slot_mapping`,
    `fill_index`, `fill_rows` int64 `[max_batch]`, `seq_lens` int32 `[max_batch]`, `cu_seqlens_q`
    int32 `[max_batch + 1]`, then `block_tables` int32 `[max_batch, width]`, each at an offset
    aligned to `ALIGN` bytes.

    Attributes:
        offsets: section name -> (byte offset, numpy dtype, elements).
        nbytes: the whole buffer.
    """

    def __init__(self, max_batch: int, width: int) -> None:
        if max_batch < 1 or width < 1:
            raise ValueError(f"max_batch, width: must be positive, got {max_batch}, {width}")
        self.max_batch, self.width = max_batch, width
        self.offsets: dict[str, tuple[int, type, int]] = {}
        total = 0
        for name, dtype, scale, extra in _SECTIONS + (("block_tables", np.int32, width, 0),):
            count = max_batch * scale + extra
            self.offsets[name] = (total, dtype, count)
            total += -(-count * np.dtype(dtype).itemsize // ALIGN) * ALIGN
        self.nbytes = total

    def prefix(self, size: int) -> int:
        """Bytes from the start through row `size` of the block table: what a step padded to
        `size` rows needs copied (every other section whole)."""
        offset, _, _ = self.offsets["block_tables"]
        return offset + size * self.width * 4

    def views(self, buffer: np.ndarray) -> dict[str, np.ndarray]:
        """Typed numpy views of `buffer` (uint8, `nbytes`) by section; `block_tables` as `[M, width]`."""
        out = {}
        for name, (offset, dtype, count) in self.offsets.items():
            view = buffer[offset:offset + count * np.dtype(dtype).itemsize].view(dtype)
            out[name] = view.reshape(self.max_batch, self.width) if name == "block_tables" else view
        return out


class DecodeStage:
    """The host copy of a `DecodeLayout` buffer (pageable numpy; `DecodeBuffers.upload` pins a
    copy of its prefix each step, so it may be rewritten as soon as that returns).

    Padding written by `pack_decode` for rows `[B:size]`: token 0, position 0, slot -1 (the KV
    write skips it), sequence length 1, block-table row of zeros; fill entries past the step's
    placeholders point at distinct scratch rows `[max_batch, 2 * max_batch)` and read row 0.
    """

    def __init__(self, layout: DecodeLayout) -> None:
        self.layout = layout
        self.buffer = np.zeros(layout.nbytes, dtype=np.uint8)
        self.views = layout.views(self.buffer)
        m = layout.max_batch
        self.views["cu_seqlens_q"][:] = np.arange(m + 1, dtype=np.int32)
        self.views["slot_mapping"][:] = -1
        self.views["seq_lens"][:] = 1
        self._scratch = np.arange(m, 2 * m, dtype=np.int64)   # fill padding: a distinct scratch row each
        self.views["fill_index"][:] = self._scratch
        self.row_cols = np.zeros(m, dtype=np.int64)   # per block-table row: leading columns that may be nonzero


def pack_decode(chunks: Sequence, stage: DecodeStage, size: int, block_size: int, num_blocks: int,
                tables, fill_rows_available: int | None) -> int:
    """Writes a step of decode chunks (one token each, every chunk sampled) into `stage`, rows
    `[:len(chunks)]`, and pads rows up to `size`, as `prepare_inputs` then `DecodeBuffers.load`
    would lay them out.

    Args:
        chunks: `ScheduledChunk`s with one token each and a `request_id` (`tables` keys rows by it).
        stage: the host buffer to fill.
        size: the captured batch size the step replays (>= len(chunks), <= max_batch).
        block_size: S, tokens per KV block.
        num_blocks: size of the KV pool; every block id must be in `[0, num_blocks)`.
        tables: the runner's `PersistentBlockTables` (synced here, as `prepare_inputs` syncs it).
        fill_rows_available: rows of the previous step's sampled ids (`fill_from`), None without them.

    Returns:
        F, the chunks whose last token is a placeholder (`fill_row >= 0`): entries `[:F]` of
        `fill_index` / `fill_rows` are theirs.

    Raises:
        ValueError: as `prepare_inputs` for the same chunks (a negative `start_pos`, a block table
            too short for the chunk or naming a block outside the pool, named with the chunk
            index), a placeholder without `fill_from` (names `fill_from`), or a `fill_row` past
            its rows (names `fill_row`).
    """
    batch, layout, v = len(chunks), stage.layout, stage.views
    tokens = [c.token_ids[0] for c in chunks]
    starts = np.fromiter((c.start_pos for c in chunks), dtype=np.int64, count=batch)
    n_blocks = np.fromiter((len(c.block_ids) for c in chunks), dtype=np.int64, count=batch)
    for bad, message in ((starts < 0, "start_pos: chunk {i} has negative start_pos {s}"),
                         (n_blocks * block_size < starts + 1,
                          "block_ids: chunk {i} has {b} blocks of {S}, too few for {L} tokens")):
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(message.format(i=i, s=starts[i], b=n_blocks[i], S=block_size, L=starts[i] + 1))
    rows = np.fromiter((tables.sync(c.request_id, c.block_ids) for c in chunks), dtype=np.int64, count=batch)
    width = min(layout.width, tables.table.shape[1])
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
    # Block tables: only the columns this step uses are written (host work grows with batch x the
    # longest table, not batch x width); columns a row held before past them are zeroed.
    cols = int(n_blocks.max())
    bt, held = v["block_tables"], stage.row_cols
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
    positions = starts % block_size
    v["input_ids"][:batch] = tokens
    v["input_ids"][batch:size] = 0
    v["positions"][:batch] = starts
    v["positions"][batch:size] = 0
    v["slot_mapping"][:batch] = table[np.arange(batch), starts // block_size] * block_size + positions
    v["slot_mapping"][batch:size] = -1
    v["seq_lens"][:batch] = starts + 1
    v["seq_lens"][batch:size] = 1
    count = len(filled)
    if count:
        index, source = zip(*filled)
        v["fill_index"][:count] = index
        v["fill_rows"][:count] = source
    v["fill_index"][count:] = stage._scratch[count:]
    v["fill_rows"][count:] = 0
    return count
