# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""ModelRunner: the junction between the (device-free) scheduler and the model on a device.

It owns the model weights and the paged KV cache, turns a step's `ScheduledChunk`s into flat
tensors, runs one forward pass and returns float32 logits for the rows that need them.
"""

from __future__ import annotations

import torch

from deepinfer_core.config import EngineConfig, ModelConfig
from deepinfer_core.executor.batch import ModelOutput, ScheduledChunk, prepare_inputs
from deepinfer_core.loader import iter_weights
from deepinfer_core.models.registry import build_model


class ModelRunner:
    """Loads the model and executes scheduled steps.

    Args:
        model_config: the architecture and checkpoint to load.
        engine_config: block size, KV memory budget, dtype/device defaults.
        device: overrides `engine_config.device`.
        dtype: overrides the dtype resolved from `engine_config.dtype`.

    The KV cache is not allocated until `allocate_kv_cache` is called.
    """

    def __init__(self, model_config: ModelConfig, engine_config: EngineConfig,
                 device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> None:
        self.model_config = model_config
        self.engine_config = engine_config
        self.device = torch.device(device if device is not None else engine_config.device)
        self.dtype = dtype if dtype is not None else model_config.resolve_dtype(engine_config.dtype, self.device)
        self.block_size = engine_config.block_size
        self.model = build_model(model_config, self.dtype, self.device)
        self.model.load_weights(iter_weights(model_config))
        self.kv_caches: list[tuple[torch.Tensor, torch.Tensor]] = []

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
    def execute_model(self, chunks: list[ScheduledChunk]) -> ModelOutput:
        """Runs one step over `chunks` (prefill chunks and decode tokens mixed).

        Returns:
            ModelOutput with `logits [num chunks with sample=True, V]` float32 in chunk order and
            `prompt_logits` for chunks that asked for them.

        Raises:
            ValueError: the KV cache is not allocated, or a chunk is malformed.
        """
        if not self.kv_caches:
            raise ValueError("kv_caches: call allocate_kv_cache() before execute_model()")
        step = prepare_inputs(chunks, self.block_size, self.device, self.kv_caches[0][0].shape[0])
        hidden = self.model(step.input_ids, step.positions, self.kv_caches, step.meta)
        logits = self.model.compute_logits(hidden[step.sample_indices])
        prompt_logits = {
            i: self.model.compute_logits(hidden[step.cu_seqlens[i]: step.cu_seqlens[i + 1]])
            for i, chunk in enumerate(chunks) if chunk.prompt_logprobs
        }
        return ModelOutput(logits=logits, prompt_logits=prompt_logits)
