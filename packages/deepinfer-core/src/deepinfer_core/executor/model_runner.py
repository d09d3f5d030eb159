# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""ModelRunner: the junction between the (device-free) scheduler and the model on a device.

It owns the model weights and the paged KV cache, turns a step's `ScheduledChunk`s into flat
tensors, runs one forward pass and returns float32 logits for the rows that need them.
On CUDA, pure-decode steps replay captured CUDA graphs once `capture_cuda_graphs` has run, and
with `EngineConfig.mixed_cuda_graphs` so do mixed steps (`executor.mixed_graph`).
"""

from __future__ import annotations

import itertools

import torch

from deepinfer_core.config import EngineConfig, ModelConfig
from deepinfer_core.executor.attention_metadata import AttentionMetadata
from deepinfer_core.executor.block_tables import PersistentBlockTables
from deepinfer_core.executor.batch import ModelOutput, ScheduledChunk, StepInputs, prepare_inputs
from deepinfer_core.executor.cuda_graph import DecodeGraphs, capture_sizes, pick_size
from deepinfer_core.executor.packed_inputs import MAX_UPLOAD
from deepinfer_core.executor.mixed_graph import MixedGraphs, capture_or_eager, mixed_sizes
from deepinfer_core.executor.verify_graph import VerifyGraphs, verify_chunks
from deepinfer_core.layers.batch_invariant import set_batch_invariant
from deepinfer_core.loader import iter_weights
from deepinfer_core.loader.dummy import fill_dummy_weights
from deepinfer_core.models.registry import build_model
from deepinfer_core.executor.transfer import to_device


VERIFY_GRAPH_MAX_BATCH = 64  # larger verification batches run eagerly (graph memory: B * (k + 1) * V)


class ModelRunner:
    """Loads the model and executes scheduled steps.

    Args:
        model_config: the architecture and checkpoint to load.
        engine_config: block size, KV memory budget, dtype/device defaults.
        device: overrides `engine_config.device`.
        dtype: overrides the dtype resolved from `engine_config.dtype`.

    The KV cache is not allocated until `allocate_kv_cache` is called. With
    `engine_config.load_format == "dummy"` the weights are seeded random values
    (`loader.dummy.fill_dummy_weights`, seed `engine_config.seed`) and no weight file is read.
    With `engine_config.deterministic` every layer runs its batch-invariant kernel
    (`layers.batch_invariant.set_batch_invariant`).
    """

    def __init__(self, model_config: ModelConfig, engine_config: EngineConfig,
                 device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> None:
        self.model_config = model_config
        self.engine_config = engine_config
        self.device = torch.device(device if device is not None else engine_config.device)
        self.dtype = dtype if dtype is not None else model_config.resolve_dtype(engine_config.dtype, self.device)
        self.block_size = engine_config.block_size
        self.model = build_model(model_config, self.dtype, self.device)
        if engine_config.load_format == "dummy":
            fill_dummy_weights(self.model, engine_config.seed)
        else:
            self.model.load_weights(iter_weights(model_config))
        set_batch_invariant(self.model, engine_config.deterministic)
        self.kv_caches: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.graphs: DecodeGraphs | None = None
        self.plain_graphs: DecodeGraphs | None = None   # without the aux features (steps that skip them)
        self.feature_free_graphs = False   # capture `plain_graphs` too (a proposer that may decline features)
        # Decoder layers whose outputs every step also returns (features for a speculative drafter).
        self.aux_layers: tuple[int, ...] = ()
        self._graph_aux_layers: tuple[int, ...] = ()
        self.verify_graphs: VerifyGraphs | None = None
        self.mixed_graphs: MixedGraphs | None = None
        self.block_tables: PersistentBlockTables | None = None

    def init_block_tables(self, max_rows: int, max_model_len: int) -> None:
        """Keeps block tables between steps (`executor.block_tables`); rows are freed by `release`."""
        self.block_tables = PersistentBlockTables(max_rows, -(-max_model_len // self.block_size))

    def release(self, request_id: str) -> None:
        """The request finished or was preempted: its block-table row is free."""
        if self.block_tables is not None:
            self.block_tables.release(request_id)

    def kv_bytes_per_block(self) -> int:
        """Bytes one KV block takes over all layers (K and V)."""
        cfg = self.model_config
        per_layer = self.block_size * cfg.num_key_value_heads * cfg.head_dim * self.dtype.itemsize
        return 2 * cfg.num_hidden_layers * per_layer

    def allocate_kv_cache(self, num_blocks: int | None = None) -> int:
        """Allocates per-layer K and V caches `[num_blocks, block_size, Hk, D]` (zeroed).

        Args:
            num_blocks: blocks to allocate; None sizes the pool from
                `engine_config.kv_cache_memory // kv_bytes_per_block()`.

        Returns:
            The number of blocks allocated.

        Raises:
            ValueError: fewer than one block fits (names `kv_cache_memory` or `num_blocks`).
        """
        if num_blocks is None:
            num_blocks = self.engine_config.kv_cache_memory // self.kv_bytes_per_block()
            if num_blocks < 1:
                raise ValueError(f"kv_cache_memory: {self.engine_config.kv_cache_memory} bytes is less than "
                                 f"one KV block ({self.kv_bytes_per_block()} bytes)")
        if num_blocks < 1:
            raise ValueError(f"num_blocks: must be positive, got {num_blocks}")
        cfg = self.model_config
        shape = (num_blocks, self.block_size, cfg.num_key_value_heads, cfg.head_dim)
        self.kv_caches = [
            (torch.zeros(shape, dtype=self.dtype, device=self.device),
             torch.zeros(shape, dtype=self.dtype, device=self.device))
            for _ in range(cfg.num_hidden_layers)
        ]
        return num_blocks

    @torch.inference_mode()
    def capture_cuda_graphs(self, max_model_len: int) -> list[int]:
        """Captures pure-decode CUDA graphs for `capture_sizes(max_num_seqs)` (after the KV cache).

        Does nothing on a non-CUDA device or with `enforce_eager`.

        Args:
            max_model_len: longest sequence; fixes the block-table width of the graphs.

        Returns:
            The captured batch sizes (empty when nothing was captured).

        Raises:
            ValueError: the KV cache is not allocated.
        """
        if not self.kv_caches:
            raise ValueError("kv_caches: call allocate_kv_cache() before capture_cuda_graphs()")
        if self.device.type != "cuda" or self.engine_config.enforce_eager:
            return []
        width = -(-max_model_len // self.block_size)
        self._graph_aux_layers = self.aux_layers  # graphs return these features too; others run eagerly
        spec = self.engine_config.speculative_config
        if spec is not None:  # verification steps: Q = k + 1 tokens per request, batches up to 64
            sizes = [s for s in capture_sizes(self.engine_config.max_num_seqs) if s <= VERIFY_GRAPH_MAX_BATCH]
            self.verify_graphs = VerifyGraphs(self._logits_step, sizes, spec["num_speculative_tokens"] + 1,
                                              width, self.block_size, self.device)
        self.graphs = DecodeGraphs(self._logits_step, capture_sizes(self.engine_config.max_num_seqs),
                                   width, self.device)
        if self.aux_layers and self.feature_free_graphs:   # steps whose features a proposer declines
            self.plain_graphs = DecodeGraphs(self._plain_logits_step, self.graphs.sizes, width, self.device,
                                             pool=self.graphs.pool)   # never replayed with `graphs`: one pool
        if self.engine_config.mixed_cuda_graphs:   # prefill and mixed steps of up to 8192 tokens
            seqs, sizes = self.engine_config.max_num_seqs, mixed_sizes(self.engine_config.max_num_batched_tokens)
            self.mixed_graphs = capture_or_eager(lambda: MixedGraphs(self._mixed_step, sizes, seqs, width,
                                                                     self.block_size, self.device,
                                                                     pool=self.graphs.pool))
        return self.graphs.sizes

    def _logits_step(self, input_ids: torch.Tensor, positions: torch.Tensor,
                     meta: AttentionMetadata) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """The captured decode step: logits `[N, V]`, plus the `aux_layers` hidden states `[N, A]`
        (what a drafter observes) when a proposer asked for them."""
        if self.aux_layers:
            hidden, aux = self.model(input_ids, positions, self.kv_caches, meta, self.aux_layers)
            return self.model.compute_logits(hidden), aux
        return self.model.compute_logits(self.model(input_ids, positions, self.kv_caches, meta))

    def _plain_logits_step(self, input_ids: torch.Tensor, positions: torch.Tensor,
                           meta: AttentionMetadata) -> torch.Tensor:
        """The captured decode step without features: logits `[N, V]`."""
        return self.model.compute_logits(self.model(input_ids, positions, self.kv_caches, meta))

    def _mixed_step(self, input_ids: torch.Tensor, positions: torch.Tensor,
                    meta: AttentionMetadata) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """The captured mixed step: the last hidden states `[T, H]` (the LM head runs after the
        replay), plus the `aux_layers` hidden states `[T, A]` when a proposer asked for them."""
        if self.aux_layers:
            return self.model(input_ids, positions, self.kv_caches, meta, self.aux_layers)
        return self.model(input_ids, positions, self.kv_caches, meta)

    def _packed_graphs(self, chunks: list[ScheduledChunk], features: bool) -> DecodeGraphs | None:
        """The decode graphs that replay this step with `DecodeGraphs.run_chunks`, or None for the
        general path (`EngineConfig.packed_graph_inputs` off, no graphs, persistent block tables off,
        or a chunk that is not one sampled token of a known request within the graphs' width): the
        feature-free graphs when `features` is False and they exist, as `execute_model` picks. A
        step whose padded rows would upload more than `packed_inputs.MAX_UPLOAD` bytes takes the
        general path too."""
        graphs = self.graphs
        if (graphs is None or not self.engine_config.packed_graph_inputs or self.block_tables is None
                or self.aux_layers != self._graph_aux_layers or len(chunks) > graphs.sizes[-1] or not chunks):
            return None
        size = pick_size(graphs.sizes, len(chunks))
        if graphs.buffers.layout.prefix(size) > MAX_UPLOAD:
            return None
        width = graphs.buffers.width
        for c in chunks:
            if (len(c.token_ids) != 1 or not c.sample or c.prompt_logprobs or c.num_logits != 1
                    or c.request_id is None or len(c.block_ids) > width):
                return None
        if not features and self.plain_graphs is not None:
            return self.plain_graphs
        return graphs

    def _packed_verify(self, chunks: list[ScheduledChunk]) -> bool:
        """Whether this step replays the verification graphs with `VerifyGraphs.run_chunks`, as
        `execute_model`'s general path would replay them (`packed_graph_inputs` on, a step with a
        chunk of more than one token, verification-shaped, known requests, no placeholder, within
        the width and `packed_inputs.MAX_UPLOAD`)."""
        graphs = self.verify_graphs
        if (graphs is None or not self.engine_config.packed_graph_inputs or self.block_tables is None
                or self.aux_layers != self._graph_aux_layers or not chunks or len(chunks) > graphs.sizes[-1]
                or not verify_chunks(chunks, graphs.query_len) or all(len(c.token_ids) == 1 for c in chunks)):
            return False
        width = graphs.buffers.width - graphs.buffers.spare
        if any(c.request_id is None or c.fill_row >= 0 or len(c.block_ids) > width for c in chunks):
            return False
        return graphs.buffers.packed.layout.prefix(pick_size(graphs.sizes, len(chunks))) <= MAX_UPLOAD

    def _use_graph(self, chunks: list[ScheduledChunk], step: StepInputs) -> bool:
        return (self.graphs is not None and step.meta.is_decode_only and self.aux_layers == self._graph_aux_layers
                and self.graphs.fits(len(chunks), step.meta.block_tables.shape[1])
                and all(c.sample and not c.prompt_logprobs and c.num_logits == 1 for c in chunks))

    @torch.inference_mode()
    def execute_model(self, chunks: list[ScheduledChunk], fill_from: torch.Tensor | None = None,
                      features: bool = True) -> ModelOutput:
        """Runs one step over `chunks` (prefill chunks and decode tokens mixed).

        Args:
            chunks: the step's work.
            fill_from: `[R]` int64 token ids on the device (the previous step's samples): a chunk
                with `fill_row >= 0` takes its last token from that row, without a host round trip.
            features: False skips the `aux_layers` features this step (the proposer declined them:
                `Proposer.wants_features`); a decode step then replays the graphs captured without
                them (`plain_graphs`), an eager step computes none.

        Returns:
            ModelOutput with `logits [num chunks with sample=True, V]` float32 in chunk order,
            `prompt_logits` for chunks that asked for them, and `aux_hidden` `[T, A]` when
            `aux_layers` is set and `features` is True (else None).

        Raises:
            ValueError: the KV cache is not allocated, or a chunk is malformed.
        """
        if not self.kv_caches:
            raise ValueError("kv_caches: call allocate_kv_cache() before execute_model()")
        graphs = self._packed_graphs(chunks, features)
        if graphs is not None:   # a graph-replayed decode step, its inputs uploaded in one copy
            out = graphs.run_chunks(chunks, self.block_size, self.kv_caches[0][0].shape[0], self.block_tables,
                                    fill_from)
            if isinstance(out, tuple):
                logits, aux = out
                return ModelOutput(logits=logits, aux_hidden=aux if features else None,
                                   cu_seqlens=list(range(len(chunks) + 1)))
            return ModelOutput(logits=out)
        if self._packed_verify(chunks):   # a verification step, likewise
            out = self.verify_graphs.run_chunks(chunks, self.block_size, self.kv_caches[0][0].shape[0],
                                                self.block_tables)
            cu = list(itertools.accumulate((len(c.token_ids) for c in chunks), initial=0))
            if isinstance(out, tuple):
                logits, aux = out
                return ModelOutput(logits=logits, aux_hidden=aux if features else None, cu_seqlens=cu)
            return ModelOutput(logits=out, cu_seqlens=cu)
        step = prepare_inputs(chunks, self.block_size, self.device, self.kv_caches[0][0].shape[0], self.block_tables)
        filled = [(step.cu_seqlens[i + 1] - 1, c.fill_row) for i, c in enumerate(chunks) if c.fill_row >= 0]
        if filled:
            if fill_from is None:
                raise ValueError("fill_from: chunks have placeholder tokens (fill_row) but no source ids")
            index, rows = zip(*filled)
            step.input_ids[to_device(list(index), torch.int64, self.device)] = \
                fill_from[to_device(list(rows), torch.int64, self.device)]
        if self._use_graph(chunks, step):
            if not features and self.plain_graphs is not None:
                return ModelOutput(logits=self.plain_graphs.run(step))
            if self.aux_layers:  # the graphs were captured with the drafter's feature layers
                logits, aux = self.graphs.run(step)
                return ModelOutput(logits=logits, aux_hidden=aux if features else None, cu_seqlens=step.cu_seqlens)
            return ModelOutput(logits=self.graphs.run(step))
        if (self.verify_graphs is not None and not step.meta.is_decode_only
                and self.aux_layers == self._graph_aux_layers and self.verify_graphs.fits(chunks, step)):
            out = self.verify_graphs.run(step)
            if self.aux_layers:
                logits, aux = out
                return ModelOutput(logits=logits, aux_hidden=aux if features else None, cu_seqlens=step.cu_seqlens)
            return ModelOutput(logits=out, cu_seqlens=step.cu_seqlens)
        aux = None
        if (self.mixed_graphs is not None and self.aux_layers == self._graph_aux_layers
                and self.mixed_graphs.fits(chunks, step)):   # the forward replayed; the LM head below
            hidden, aux = self.mixed_graphs.run(step) if self.aux_layers else (self.mixed_graphs.run(step), None)
            aux = aux if features else None
        elif self.aux_layers and features:
            hidden, aux = self.model(step.input_ids, step.positions, self.kv_caches, step.meta, self.aux_layers)
        else:
            hidden = self.model(step.input_ids, step.positions, self.kv_caches, step.meta)
        logits = self.model.compute_logits(hidden[step.sample_indices])
        prompt_logits = {
            i: self.model.compute_logits(hidden[step.cu_seqlens[i]: step.cu_seqlens[i + 1]])
            for i, chunk in enumerate(chunks) if chunk.prompt_logprobs
        }
        return ModelOutput(logits=logits, prompt_logits=prompt_logits, aux_hidden=aux, cu_seqlens=step.cu_seqlens)
