# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""CUDA graphs for pure-decode steps: a ladder of batch sizes over static input buffers.

A decode step of B requests is padded to the smallest captured size >= B. Padded rows get
slot -1 (`ops.store_kv_cache` skips them, so they never write a real KV block), sequence
length 1 (a valid one-token attention over slot 0 of block 0: it only reads, and its output is
discarded; 1 rather than 0 because the prefill kernel, which deterministic mode uses for decode
steps too, requires seq_len >= query length) and an all-zero block table row. Block
tables have a fixed width (`max_model_len` / block size, rounded up), so kernel workspaces are
sized from static shapes. The graphs replay the model and the LM head in one launch.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator

import torch

from deepinfer_core.executor.attention_metadata import AttentionMetadata
from deepinfer_core.executor.batch import ScheduledChunk, StepInputs
from deepinfer_core.executor.packed_inputs import PackedInputs


def capture_sizes(max_num_seqs: int) -> list[int]:
    """The batch sizes to capture: 1, 2, 4, 8, 16, 24, 32, then steps of 16, capped at `max_num_seqs`.

    `max_num_seqs` itself is always included, so every decode batch the scheduler forms fits.

    Raises:
        ValueError: `max_num_seqs` < 1 (names it).
    """
    if max_num_seqs < 1:
        raise ValueError(f"max_num_seqs: must be positive, got {max_num_seqs}")
    ladder = [1, 2, 4, 8, 16, 24, 32]
    ladder += list(range(48, max_num_seqs + 1, 16))
    sizes = [s for s in ladder if s <= max_num_seqs]
    if sizes[-1] != max_num_seqs:
        sizes.append(max_num_seqs)
    return sizes


def pick_size(sizes: list[int], batch: int) -> int | None:
    """The smallest of `sizes` (ascending) that holds `batch` rows; None when none does."""
    for size in sizes:
        if size >= batch:
            return size
    return None



@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block (restored after): a collection during
    a CUDA graph capture can free another graph (an engine dropped earlier, still in a reference
    cycle), whose destructor is not permitted while a stream captures and invalidates the capture
    (`cudaErrorStreamCaptureInvalidated`; torch's `torch.cuda.graph` no longer collects before a
    capture unless `torch.compiler.config.force_cudagraph_gc`)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()

class DecodeBuffers:
    """Static decode inputs `[max_batch]` / `[max_batch, width]` that the graphs read: views of
    one byte buffer (`packed_inputs.PackedInputs`, query length 1), so that `upload` fills them
    all with one host-to-device copy.

    Args:
        max_batch: rows (the largest captured size).
        width: block-table columns (blocks of the longest sequence).
        device: where the buffers live.

    Attributes:
        input_ids, positions, slot_mapping: `[max_batch]` int64.
        block_tables: `[max_batch, width]` int32.
        seq_lens: `[max_batch]` int32.
        cu_seqlens_q: `[max_batch + 1]` int32, `0, 1, ..., max_batch` (one token per row).
        flat: the byte buffer they are views of.
    """

    def __init__(self, max_batch: int, width: int, device: torch.device | str) -> None:
        self.max_batch, self.width = max_batch, width
        self.packed = PackedInputs(max_batch, width, 1, device)
        self.layout, self.flat, v = self.packed.layout, self.packed.flat, self.packed.views
        self.input_ids = v["input_ids"][:max_batch]
        self.positions, self.slot_mapping = v["positions"], v["slot_mapping"]
        self.seq_lens, self.cu_seqlens_q, self.block_tables = v["seq_lens"], v["cu_seqlens_q"], v["block_tables"]

    def meta(self, size: int) -> AttentionMetadata:
        """Decode metadata over the first `size` rows (views of the static buffers)."""
        return AttentionMetadata(slot_mapping=self.slot_mapping[:size], block_tables=self.block_tables[:size],
                                 cu_seqlens_q=self.cu_seqlens_q[: size + 1], seq_lens=self.seq_lens[:size],
                                 max_query_len=1, is_decode_only=True)

    def load(self, step: StepInputs, size: int) -> None:
        """Copies a decode step of B <= `size` rows into rows `[:B]` and pads rows `[B:size]`.

        Padded rows: token 0, position 0, slot -1, sequence length 1, block table zeros.

        Raises:
            ValueError: the step is not decode-only, or does not fit `size` / `width`.
        """
        batch, cols = step.meta.block_tables.shape
        if not step.meta.is_decode_only or step.input_ids.shape[0] != batch:
            raise ValueError("step: CUDA-graph decode needs one query token per request")
        if batch > size or size > self.max_batch or cols > self.width:
            raise ValueError(f"step: batch {batch} x {cols} blocks does not fit size {size} x {self.width}")
        self.input_ids[:batch].copy_(step.input_ids)
        self.positions[:batch].copy_(step.positions)
        self.slot_mapping[:batch].copy_(step.meta.slot_mapping)
        self.seq_lens[:batch].copy_(step.meta.seq_lens)
        self.block_tables[:batch, :cols].copy_(step.meta.block_tables)
        self.block_tables[:batch, cols:].zero_()
        if batch < size:
            self.input_ids[batch:size].zero_()
            self.positions[batch:size].zero_()
            self.slot_mapping[batch:size].fill_(-1)
            self.seq_lens[batch:size].fill_(1)
            self.block_tables[batch:size].zero_()

    def upload(self, chunks: list[ScheduledChunk], size: int, block_size: int, num_blocks: int, tables,
               fill_from: torch.Tensor | None = None) -> None:
        """`load` for decode chunks without `prepare_inputs`: the step packed on the host (the same
        rows and padding, `tables` synced), copied to the device in one copy and the placeholder
        ids (`fill_row`) gathered from `fill_from` on the device: five torch calls in all, where
        `prepare_inputs`, the fill and `load` make ~25-35 on the CPU, more on CUDA (`packed_inputs.PackedInputs.upload`).

        Args:
            chunks: one token each, every chunk sampled, each with a `request_id`; at most `size`.
            size: the captured batch size to fill (rows past the chunks are padding).
            block_size, num_blocks, tables: as `prepare_inputs` takes them.
            fill_from: `[R]` int64 sampled ids of the previous step, on this device.

        Raises:
            ValueError: as `prepare_inputs` and `packed_inputs.pack_step` (named fields).
        """
        self.packed.upload(chunks, size, block_size, num_blocks, tables, fill_from)


StepFn = Callable[[torch.Tensor, torch.Tensor, AttentionMetadata], "torch.Tensor | tuple[torch.Tensor, ...]"]
"""(input_ids `[N]`, positions `[N]`, meta) -> logits `[N, V]` float32, or (logits, aux `[N, A]`)."""


class DecodeGraphs:
    """Captured decode graphs, one per size of the ladder, sharing one memory pool.

    Args:
        step_fn: the forward pass to capture (model + LM head).
        sizes: ascending batch sizes to capture.
        width: block-table columns.
        device: a CUDA device.
        pool: a graph memory pool to capture into (another `DecodeGraphs`'s `pool`: sets never
            replayed at once may share one; `run` returns copies, so no output is overwritten
            while in use); default: a new one.

    Capture runs each size once eagerly (warm-up: kernel compilation, cuBLAS handles) and
    then records it; with all slots -1 nothing is written to the KV cache.
    """

    def __init__(self, step_fn: StepFn, sizes: list[int], width: int, device: torch.device,
                 pool: object | None = None) -> None:
        self.sizes = sorted(sizes)
        self.buffers = DecodeBuffers(self.sizes[-1], width, device)
        self.graphs: dict[int, torch.cuda.CUDAGraph] = {}
        self.outputs: dict[int, torch.Tensor | tuple[torch.Tensor, ...]] = {}
        self.replays = 0  # graph launches so far (benchmarks' step classification)
        b = self.buffers
        for size in reversed(self.sizes):  # largest first: smaller graphs reuse its pool
            step_fn(b.input_ids[:size], b.positions[:size], b.meta(size))
            torch.cuda.synchronize(device)
            graph = torch.cuda.CUDAGraph()
            with gc_paused(), torch.cuda.graph(graph, pool=pool):
                self.outputs[size] = step_fn(b.input_ids[:size], b.positions[:size], b.meta(size))
            pool = graph.pool()
            self.graphs[size] = graph
        self.pool = pool
        torch.cuda.synchronize(device)

    def fits(self, batch: int, width: int) -> bool:
        """True when a decode step of `batch` rows and `width` block-table columns can replay."""
        return batch <= self.sizes[-1] and width <= self.buffers.width

    def run(self, step: StepInputs) -> torch.Tensor | tuple[torch.Tensor, ...]:
        """Replays the graph for a decode step; returns the step function's output for the first
        B rows as fresh tensors: logits `[B, V]` float32, or a tuple (logits, aux hidden states
        `[B, A]`) when the step function returns one."""
        batch = step.input_ids.shape[0]
        size = pick_size(self.sizes, batch)
        if size is None:
            raise ValueError(f"step: batch {batch} exceeds the largest captured size {self.sizes[-1]}")
        self.buffers.load(step, size)
        return self._replay(size, batch)

    def run_chunks(self, chunks: list[ScheduledChunk], block_size: int, num_blocks: int, tables,
                   fill_from: torch.Tensor | None = None) -> torch.Tensor | tuple[torch.Tensor, ...]:
        """`run` for decode chunks, their inputs packed on the host and uploaded in one copy
        (`DecodeBuffers.upload`; the caller checks `fits` and that every chunk decodes one
        sampled token and has a `request_id`). Same outputs as `run` on `prepare_inputs`' step.

        Raises:
            ValueError: as `DecodeBuffers.upload`, or more chunks than the largest size.
        """
        batch = len(chunks)
        size = pick_size(self.sizes, batch)
        if size is None:
            raise ValueError(f"step: batch {batch} exceeds the largest captured size {self.sizes[-1]}")
        self.buffers.upload(chunks, size, block_size, num_blocks, tables, fill_from)
        return self._replay(size, batch)

    def _replay(self, size: int, batch: int) -> torch.Tensor | tuple[torch.Tensor, ...]:
        """Replays the graph of `size` and returns its first `batch` output rows as fresh tensors."""
        self.graphs[size].replay()
        self.replays += 1
        out = self.outputs[size]
        if isinstance(out, tuple):
            return tuple(t[:batch].clone() for t in out)
        return out[:batch].clone()
