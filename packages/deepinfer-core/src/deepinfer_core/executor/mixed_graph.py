# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""CUDA graphs for mixed steps (prefill chunks beside decode tokens), one per total-token bucket.

An eager step launches every layer's kernels from Python. On the H200's host that took 30-40 ms
for SmolLM2-135M whatever the step's token count (64-320), against ~1.1 ms for a replayed
decode step (`packages/deepinfer-dspark/BENCHMARKS.md`, session 26): in a serving loop every
joining request cost ~30 decode steps. The prefill attention kernel finds each tile's request
on the device (bisection over `cu_seqlens_q`) and its grid depends only on the token count T and
the request count B, so a step of T tokens and B chunks replays the graph captured for the
smallest bucket `T_size >= T` with `B_max + 1` requests:

- rows `[0, T)` are the step's tokens and requests `[0, B)` its chunks, as `prepare_inputs` made
  them (the block tables right-padded with zeros);
- rows `[T, T_size)` belong to one padding request (number B): token 0, position 0, slot -1 (no
  KV is written), sequence length `T_size - T`, a block-table row of zeros (its keys are read
  from block 0; its outputs are never used), so a real query's attention is untouched;
- requests `(B, B_max]` have no query (`cu_seqlens_q` stays at `T_size`) and no keys.

Every other layer is row by row (norms, projections, rotary, activations), so the real rows'
results do not depend on the padding. A graph ends at the model's last hidden states `[T_size, H]`
(and the drafter's features `[T_size, A]`): the LM head runs after the replay, eagerly, on the
rows the step samples (and on a prompt-logprobs chunk's rows), as in an eager step, so any number
of rows of logits fits and the graphs hold no `[rows, V]` logits buffer per bucket (the
practice of engines that capture the model's forward only). The graphs share the decode graphs'
memory pool. The same padded forward runs eagerly with `capture=False`, which is how the CPU
tests check the padding against the unpadded step.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import torch

from deepinfer_core.executor.attention_metadata import AttentionMetadata
from deepinfer_core.executor.batch import ScheduledChunk, StepInputs
from deepinfer_core.executor.cuda_graph import gc_paused, pick_size

logger = logging.getLogger(__name__)

MIXED_SIZES = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)   # T buckets; larger steps run eagerly

MixedStepFn = Callable[[torch.Tensor, torch.Tensor, AttentionMetadata],
                       "torch.Tensor | tuple[torch.Tensor, torch.Tensor]"]
"""(input_ids `[T]`, positions `[T]`, meta) -> the last hidden states `[T, H]`, or (hidden
states, aux hidden states `[T, A]`)."""


def mixed_sizes(max_num_batched_tokens: int) -> list[int]:
    """The T buckets to capture: `MIXED_SIZES` up to the first one that holds a whole step's
    token budget (all of them when the budget exceeds the largest).

    Raises:
        ValueError: `max_num_batched_tokens` < 1 (names it).
    """
    if max_num_batched_tokens < 1:
        raise ValueError(f"max_num_batched_tokens: must be positive, got {max_num_batched_tokens}")
    sizes = [s for s in MIXED_SIZES if s < max_num_batched_tokens]
    return sizes + [s for s in MIXED_SIZES if s >= max_num_batched_tokens][:1]


class MixedBuffers:
    """Static inputs of the mixed graphs.

    Args:
        max_tokens: rows (the largest bucket).
        max_requests: B_max, chunks a step may hold (one more request slot pads).
        width: block-table columns of the longest sequence (widened so that the padding request
            fits: `ceil(max_tokens / block_size)`).
        block_size: tokens per KV block.
        device: where the buffers live.
    """

    def __init__(self, max_tokens: int, max_requests: int, width: int, block_size: int,
                 device: torch.device | str) -> None:
        self.max_tokens, self.max_requests = max_tokens, max_requests
        self.width = max(width, -(-max_tokens // block_size))
        self.input_ids = torch.zeros(max_tokens, dtype=torch.int64, device=device)
        self.positions = torch.zeros(max_tokens, dtype=torch.int64, device=device)
        self.slot_mapping = torch.full((max_tokens,), -1, dtype=torch.int64, device=device)
        self.block_tables = torch.zeros((max_requests + 1, self.width), dtype=torch.int32, device=device)
        self.seq_lens = torch.zeros(max_requests + 1, dtype=torch.int32, device=device)
        self.cu_seqlens_q = torch.zeros(max_requests + 2, dtype=torch.int32, device=device)

    def meta(self, size: int) -> AttentionMetadata:
        """Metadata of a `size`-token step (views of the static buffers; every request slot)."""
        return AttentionMetadata(slot_mapping=self.slot_mapping[:size], block_tables=self.block_tables,
                                 cu_seqlens_q=self.cu_seqlens_q, seq_lens=self.seq_lens,
                                 max_query_len=size, is_decode_only=False)

    def load(self, step: StepInputs, size: int) -> None:
        """Copies a step of T <= `size` tokens and B <= `max_requests` chunks in, and pads it
        (see the module docstring).

        Raises:
            ValueError: the step does not fit `size`, `max_requests` or the table width (names
                `step`).
        """
        tokens, (batch, cols) = step.input_ids.shape[0], step.meta.block_tables.shape
        if tokens > size or size > self.max_tokens or batch > self.max_requests or cols > self.width:
            raise ValueError(f"step: {tokens} tokens, {batch} chunks, {cols} blocks do not fit "
                             f"a {size}-token graph ({self.max_requests} chunks, {self.width} blocks)")
        self.input_ids[:tokens].copy_(step.input_ids)
        self.input_ids[tokens:size].zero_()
        self.positions[:tokens].copy_(step.positions)
        self.positions[tokens:size].zero_()
        self.slot_mapping[:tokens].copy_(step.meta.slot_mapping)
        self.slot_mapping[tokens:size].fill_(-1)
        self.block_tables[:batch, :cols].copy_(step.meta.block_tables)
        self.block_tables[:batch, cols:].zero_()
        self.block_tables[batch:].zero_()
        self.seq_lens[:batch].copy_(step.meta.seq_lens)
        self.seq_lens[batch] = size - tokens          # the padding request
        self.seq_lens[batch + 1:].zero_()
        self.cu_seqlens_q[:batch + 1].copy_(step.meta.cu_seqlens_q)
        self.cu_seqlens_q[batch + 1:].fill_(size)

    def pad_only(self, size: int) -> None:
        """An all-padding step of `size` tokens (capture and warm-up: nothing is written)."""
        self.input_ids.zero_()
        self.positions.zero_()
        self.slot_mapping.fill_(-1)
        self.block_tables.zero_()
        self.seq_lens.zero_()
        self.seq_lens[0] = size
        self.cu_seqlens_q.fill_(size)
        self.cu_seqlens_q[0] = 0


class MixedGraphs:
    """Mixed-step graphs, one per T bucket (see the module docstring).

    Args:
        step_fn: the forward pass up to the last hidden states (`MixedStepFn`).
        sizes: ascending T buckets (`mixed_sizes`).
        max_requests: B_max (`max_num_seqs`).
        width: block-table columns of the longest sequence.
        block_size: tokens per KV block.
        device: a CUDA device (any device with `capture=False`).
        pool: a graph memory pool to capture into (the decode graphs'); default: a new one.
        capture: False runs `step_fn` eagerly on the static buffers at each `run` (the CPU tests).
    """

    def __init__(self, step_fn: MixedStepFn, sizes: list[int], max_requests: int, width: int, block_size: int,
                 device: torch.device | str, pool: object | None = None, capture: bool = True) -> None:
        self.step_fn = step_fn
        self.sizes = sorted(sizes)
        self.buffers = MixedBuffers(self.sizes[-1], max_requests, width, block_size, device)
        self.graphs: dict[int, torch.cuda.CUDAGraph] = {}
        self.outputs: dict[int, torch.Tensor | tuple[torch.Tensor, torch.Tensor]] = {}
        self.replays = 0
        self.pool = pool
        if not capture:
            return
        b = self.buffers
        for size in reversed(self.sizes):   # largest first: the smaller graphs reuse its memory
            b.pad_only(size)
            self._forward(size)             # warm-up (kernel compilation, workspaces): errors propagate
            torch.cuda.synchronize(device)
            graph, stream = torch.cuda.CUDAGraph(), torch.cuda.current_stream(device)
            try:
                with gc_paused(), torch.cuda.graph(graph, pool=self.pool):
                    self.outputs[size] = self._forward(size)
            except RuntimeError as exc:     # a failed capture may leave its side stream current
                torch.cuda.set_stream(stream)
                raise CaptureFailed(f"the {size}-token graph") from exc
            self.pool = graph.pool()
            self.graphs[size] = graph
        torch.cuda.synchronize(device)

    def _forward(self, size: int) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        b = self.buffers
        return self.step_fn(b.input_ids[:size], b.positions[:size], b.meta(size))

    def fits(self, chunks: list[ScheduledChunk], step: StepInputs) -> bool:
        """Whether a step can replay: not decode-only (the decode graphs' steps), and its
        tokens, chunks and block-table width within the buffers."""
        return (not step.meta.is_decode_only and pick_size(self.sizes, step.input_ids.shape[0]) is not None
                and len(chunks) <= self.buffers.max_requests
                and step.meta.block_tables.shape[1] <= self.buffers.width)

    def run(self, step: StepInputs) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """The step's last hidden states `[T, H]` (a view of the graph's output: read it before
        the next replay, as the runner's LM head does at once), or (hidden states, aux hidden
        states `[T, A]` as a fresh tensor: a proposer may buffer it).

        Raises:
            ValueError: the step does not fit (see `fits`; names `step`).
        """
        tokens = step.input_ids.shape[0]
        size = pick_size(self.sizes, tokens)
        if size is None:
            raise ValueError(f"step: {tokens} tokens exceed the largest mixed graph ({self.sizes[-1]})")
        self.buffers.load(step, size)
        if self.graphs:
            self.graphs[size].replay()
            out = self.outputs[size]
        else:
            out = self._forward(size)
        self.replays += 1
        if isinstance(out, tuple):
            hidden, aux = out
            return hidden[:tokens], aux[:tokens].clone()
        return out[:tokens]


class CaptureFailed(RuntimeError):
    """A mixed graph's capture failed (raised from the capture's own error: `error_chain`)."""


def error_chain(exc: BaseException) -> str:
    """`exc` and the errors it was raised from or during, innermost first ("Type: message; ..."):
    a host sync during capture raises inside the step, then again when the capture ends."""
    chain, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        chain.append(f"{type(exc).__name__}: {exc}")
        exc = exc.__cause__ or exc.__context__
    return "; ".join(reversed(chain))


def capture_or_eager(build: Callable[[], MixedGraphs]) -> MixedGraphs | None:
    """`build()` (which captures the mixed graphs), or None when a capture fails
    (`CaptureFailed`: a kernel on the step's path synchronises with the host, e.g. a backend
    that reads lengths with `.tolist()`) or memory runs out (`torch.OutOfMemoryError`), so that
    the engine starts with its prefill and mixed steps eager instead of not at all (mixed graphs
    are on by default). The failure is logged as a warning naming the errors. Any other error,
    such as one in the eager warm-up forward before each capture, propagates. Graphs captured
    before the failure into the decode graphs' pool keep that memory reserved."""
    try:
        return build()
    except (CaptureFailed, torch.OutOfMemoryError) as exc:
        logger.warning("mixed_cuda_graphs: capture failed, prefill and mixed steps run eagerly (%s)",
                       error_chain(exc))
        return None
