# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Python side of the `cpu` backend: allocate outputs, call into `_cpu_ext`."""

from __future__ import annotations

import torch

from deepinfer_kernels import _cpu_ext

_RAW = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}


def paged_attention_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                           block_tables: torch.Tensor, seq_lens: torch.Tensor, scale: float,
                           sliding_window: int | None, sinks: torch.Tensor | None,
                           split_size: int) -> torch.Tensor:
    # NOTE: one sequential pass per (request, head); split_size only matters to parallel
    # kernels, the result is batch invariant either way.
    q = q.contiguous()
    out = torch.empty_like(q)
    if q.shape[0]:
        empty = torch.empty(0, dtype=torch.float32)
        _cpu_ext.paged_attention_decode_f32(q, k_cache, v_cache, block_tables, seq_lens,
                                            sinks if sinks is not None else empty,
                                            sinks is not None, out, scale, sliding_window or 0)
    return out


def apply_token_bitmask(logits: torch.Tensor, bitmask: torch.Tensor,
                        indices: torch.Tensor | None) -> None:
    rows = (torch.arange(logits.shape[0]) if indices is None else indices.to(torch.int64)
            ).contiguous()
    if rows.numel() == 0 or logits.shape[1] == 0:
        return
    raw = _RAW[logits.dtype]
    neg_inf = int(torch.tensor(float("-inf"), dtype=logits.dtype).view(raw))
    bind = _cpu_ext.apply_token_bitmask_32 if raw == torch.int32 else _cpu_ext.apply_token_bitmask_16
    bind(logits.view(raw), logits.shape[1], neg_inf, bitmask, rows)
