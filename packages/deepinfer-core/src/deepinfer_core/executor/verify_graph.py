# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""CUDA graphs for speculative verification steps: every request scores its last token and up to
k drafts, padded to Q = k + 1 query tokens so that one graph per batch size covers every step.

Request b's chunk of n_b <= Q tokens lands in rows `b * Q .. b * Q + n_b - 1`; the other
`Q - n_b` rows are padding: token 0 at position 0 (a valid rotary row), slot -1 (nothing is
written to the KV cache). The request's sequence length is raised by the padding,
`seq_len_b + Q - n_b`, so that its real query i still sits at position `start_b + i` (the
attention kernels place query i of a Q-token chunk at `seq_len - Q + i`) and, being causal, never
sees the padded positions; padded requests (rows past the batch) get sequence length Q over
block 0. A real query's result therefore does not depend on the padding (bitwise in
deterministic mode, whose attention is batch and chunk invariant). The block tables carry
`ceil(Q / S)` spare zero columns for the padded keys.

After the replay the logits (and the drafter's features) of the real rows are gathered back in
chunk order: the layout `ModelRunner.execute_model` returns when every chunk asks for logits of
all its tokens (`num_logits == len(token_ids)`), as verification chunks do.
"""

from __future__ import annotations

import torch

from deepinfer_core.executor.attention_metadata import AttentionMetadata
from deepinfer_core.executor.batch import ScheduledChunk, StepInputs
from deepinfer_core.executor.cuda_graph import StepFn, gc_paused, pick_size
from deepinfer_core.executor.packed_inputs import PackedInputs
from deepinfer_core.executor.transfer import to_device


class VerifyBuffers:
    """Static inputs of the verification graphs: `[max_batch * Q]` tokens, `[max_batch]` requests;
    views of one byte buffer (`packed_inputs.PackedInputs`), so that `upload` fills them all with
    one host-to-device copy.

    Args:
        max_batch: requests (the largest captured size).
        query_len: Q, query tokens per request (k + 1).
        width: block-table columns of the longest sequence (spare columns are added).
        block_size: S, tokens per KV block.
        device: where the buffers live.
    """

    def __init__(self, max_batch: int, query_len: int, width: int, block_size: int,
                 device: torch.device | str) -> None:
        self.max_batch, self.query_len = max_batch, query_len
        self.spare = -(-query_len // block_size)  # columns the padded keys may reach past a table
        self.width = width + self.spare
        self.packed = PackedInputs(max_batch, self.width, query_len, device)
        v = self.packed.views
        self.input_ids = v["input_ids"][:max_batch * query_len]
        self.positions, self.slot_mapping = v["positions"], v["slot_mapping"]
        self.block_tables, self.seq_lens, self.cu_seqlens_q = v["block_tables"], v["seq_lens"], v["cu_seqlens_q"]

    def meta(self, size: int) -> AttentionMetadata:
        """Metadata over the first `size` requests (views of the static buffers)."""
        q = self.query_len
        return AttentionMetadata(slot_mapping=self.slot_mapping[: size * q], block_tables=self.block_tables[:size],
                                 cu_seqlens_q=self.cu_seqlens_q[: size + 1], seq_lens=self.seq_lens[:size],
                                 max_query_len=q, is_decode_only=False)

    def load(self, step: StepInputs, size: int) -> torch.Tensor:
        """Copies a step of B <= `size` requests into the padded layout.

        Returns:
            `[T]` int64 on the device: the padded row of each of the step's tokens, in order.

        Raises:
            ValueError: a chunk longer than Q, or the step does not fit `size` / the width.
        """
        q = self.query_len
        cu = step.cu_seqlens
        batch = len(cu) - 1
        lens = [cu[b + 1] - cu[b] for b in range(batch)]
        cols = step.meta.block_tables.shape[1]
        if batch > size or size > self.max_batch or cols + self.spare > self.width or max(lens) > q:
            raise ValueError(f"step: {batch} requests of <= {max(lens)} tokens x {cols} blocks do not fit "
                             f"{size} x {q} x {self.width}")
        rows = to_device([b * q + i for b in range(batch) for i in range(lens[b])], torch.int64,
                         self.input_ids.device)   # pinned: a pageable copy waits for the queued kernels
        pad = to_device([q - n for n in lens], torch.int32, self.seq_lens.device)
        tokens = size * q
        self.input_ids[:tokens].zero_()
        self.positions[:tokens].zero_()
        self.slot_mapping[:tokens].fill_(-1)
        self.input_ids.index_copy_(0, rows, step.input_ids)
        self.positions.index_copy_(0, rows, step.positions)
        self.slot_mapping.index_copy_(0, rows, step.meta.slot_mapping)
        self.seq_lens[:batch].copy_(step.meta.seq_lens + pad)
        self.seq_lens[batch:size].fill_(q)
        self.block_tables[:batch, :cols].copy_(step.meta.block_tables)
        self.block_tables[:batch, cols:].zero_()
        self.block_tables[batch:size].zero_()
        return rows

    def upload(self, chunks: list[ScheduledChunk], size: int, block_size: int, num_blocks: int,
               tables) -> torch.Tensor:
        """`load` for verification chunks without `prepare_inputs`: the step packed on the host
        (the same padded layout, `tables` synced) and copied to the device in one copy
        (`packed_inputs.PackedInputs.upload`).

        Returns:
            `[T]` int64 on the device: the padded row of each of the step's tokens, in order (valid
            until the next upload).

        Raises:
            ValueError: as `prepare_inputs` and `packed_inputs.pack_step` (named fields), or a
                chunk longer than Q.
        """
        longest = max(len(c.token_ids) for c in chunks)
        if longest > self.query_len:
            raise ValueError(f"step: a chunk of {longest} tokens does not fit Q = {self.query_len}")
        return self.packed.upload(chunks, size, block_size, num_blocks, tables)


def verify_chunks(chunks: list[ScheduledChunk], query_len: int) -> bool:
    """Whether a step is a verification-shaped step the graphs can run: every chunk asks for the
    logits of all its (at most Q) tokens, and none wants prompt logprobs."""
    return all(c.sample and not c.prompt_logprobs and c.num_logits == len(c.token_ids) <= query_len
               for c in chunks)


class VerifyGraphs:
    """Captured verification graphs, one per batch size, sharing one memory pool.

    Args:
        step_fn: the forward pass (model + LM head over every row; with a drafter, it also
            returns the auxiliary features).
        sizes: ascending batch sizes (requests) to capture.
        query_len: Q = k + 1.
        width: block-table columns of the longest sequence.
        block_size: S.
        device: a CUDA device.
    """

    def __init__(self, step_fn: StepFn, sizes: list[int], query_len: int, width: int, block_size: int,
                 device: torch.device) -> None:
        self.sizes = sorted(sizes)
        self.query_len = query_len
        self.buffers = VerifyBuffers(self.sizes[-1], query_len, width, block_size, device)
        self.graphs: dict[int, torch.cuda.CUDAGraph] = {}
        self.outputs: dict[int, torch.Tensor | tuple[torch.Tensor, ...]] = {}
        self.replays = 0
        pool = None
        b = self.buffers
        for size in reversed(self.sizes):  # largest first: smaller graphs reuse its pool
            n = size * query_len
            step_fn(b.input_ids[:n], b.positions[:n], b.meta(size))
            torch.cuda.synchronize(device)
            graph = torch.cuda.CUDAGraph()
            with gc_paused(), torch.cuda.graph(graph, pool=pool):
                self.outputs[size] = step_fn(b.input_ids[:n], b.positions[:n], b.meta(size))
            pool = graph.pool()
            self.graphs[size] = graph
        torch.cuda.synchronize(device)

    def fits(self, chunks: list[ScheduledChunk], step: StepInputs) -> bool:
        """True when the step is verification-shaped and fits a captured size and the width."""
        return (len(chunks) <= self.sizes[-1] and verify_chunks(chunks, self.query_len)
                and step.meta.block_tables.shape[1] + self.buffers.spare <= self.buffers.width)

    def run(self, step: StepInputs) -> torch.Tensor | tuple[torch.Tensor, ...]:
        """Replays the graph for the step; returns its outputs for the real rows, in token order
        (fresh tensors): logits `[T, V]`, or (logits, aux `[T, A]`)."""
        batch = len(step.cu_seqlens) - 1
        size = pick_size(self.sizes, batch)
        if size is None:
            raise ValueError(f"step: {batch} requests exceed the largest captured size {self.sizes[-1]}")
        return self._replay(size, self.buffers.load(step, size))

    def run_chunks(self, chunks: list[ScheduledChunk], block_size: int, num_blocks: int,
                   tables) -> torch.Tensor | tuple[torch.Tensor, ...]:
        """`run` for verification chunks, their inputs packed on the host and uploaded in one copy
        (`VerifyBuffers.upload`; the caller checks that they are verification-shaped, each with a
        `request_id`, and fit the width). Same outputs as `run` on `prepare_inputs`' step.

        Raises:
            ValueError: as `VerifyBuffers.upload`, or more chunks than the largest size.
        """
        size = pick_size(self.sizes, len(chunks))
        if size is None:
            raise ValueError(f"step: {len(chunks)} requests exceed the largest captured size {self.sizes[-1]}")
        return self._replay(size, self.buffers.upload(chunks, size, block_size, num_blocks, tables))

    def _replay(self, size: int, rows: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
        """Replays the graph of `size`; its outputs at `rows`, as fresh tensors."""
        self.graphs[size].replay()
        self.replays += 1
        out = self.outputs[size]
        if isinstance(out, tuple):
            return tuple(t.index_select(0, rows) for t in out)
        return out.index_select(0, rows)
