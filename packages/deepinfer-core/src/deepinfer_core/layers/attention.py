# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Paged attention over the KV cache (scaled dot-product attention, Vaswani et al. 2017)."""

from __future__ import annotations

import torch
from deepinfer_kernels import ops
from torch import nn

from deepinfer_core.executor.attention_metadata import AttentionMetadata


class PagedAttention(nn.Module):
    """Writes this step's K/V into the paged cache, then attends over each request's cache.

    Args:
        num_heads: Hq.
        num_kv_heads: Hk (Hq % Hk == 0; grouped-query attention).
        head_dim: D.
        scale: softmax scale, usually D ** -0.5.

    Shapes: q `[T, Hq, D]`, k/v `[T, Hk, D]`, k_cache/v_cache `[N, S, Hk, D]` (N blocks of S slots)
    -> `[T, Hq, D]`. When every request in the step has exactly one query token, the decode
    kernel runs (T == B). With `batch_invariant` (set by `set_batch_invariant`) every step takes
    the prefill kernel in its batch-invariant mode: a query's output then depends only on its
    request's cached keys/values, not on the step's other queries or on how the prompt was
    chunked, and decode and prefill positions are computed by the same code.
    """

    def __init__(self, num_heads: int, num_kv_heads: int, head_dim: int, scale: float) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = head_dim
        self.scale = scale
        self.batch_invariant = False

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                kv_cache: tuple[torch.Tensor, torch.Tensor], meta: AttentionMetadata) -> torch.Tensor:
        k_cache, v_cache = kv_cache
        ops.store_kv_cache(k, v, k_cache, v_cache, meta.slot_mapping)
        if self.batch_invariant:
            return ops.paged_attention_prefill(q, k_cache, v_cache, meta.block_tables, meta.cu_seqlens_q,
                                               meta.seq_lens, self.scale, batch_invariant=True)
        if meta.is_decode_only:
            return ops.paged_attention_decode(q, k_cache, v_cache, meta.block_tables, meta.seq_lens, self.scale)
        return ops.paged_attention_prefill(q, k_cache, v_cache, meta.block_tables, meta.cu_seqlens_q,
                                           meta.seq_lens, self.scale)
