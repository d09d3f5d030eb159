# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Triton rotary embedding: one program per (token, head) of q and of k."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _rotate_head(x_ptr, out_ptr, cos, sin, pairs, rotary_dim, head_size,
                 IS_NEOX: tl.constexpr, BLOCK_PAIRS: tl.constexpr, BLOCK_D: tl.constexpr):
    i = tl.arange(0, BLOCK_PAIRS)
    mask = i < pairs
    if IS_NEOX:
        first, second = i, i + pairs
    else:
        first, second = 2 * i, 2 * i + 1
    x1 = tl.load(x_ptr + first, mask=mask, other=0.0)
    x2 = tl.load(x_ptr + second, mask=mask, other=0.0)
    x1f, x2f = x1.to(tl.float32), x2.to(tl.float32)
    tl.store(out_ptr + first, (x1f * cos - x2f * sin).to(x1.dtype), mask=mask)
    tl.store(out_ptr + second, (x2f * cos + x1f * sin).to(x1.dtype), mask=mask)
    d = rotary_dim + tl.arange(0, BLOCK_D)                 # pass-through tail (partial rotary)
    tail = d < head_size
    tl.store(out_ptr + d, tl.load(x_ptr + d, mask=tail), mask=tail)


@triton.jit
def _rotary_kernel(pos_ptr, q_ptr, k_ptr, cos_sin_ptr, q_out_ptr, k_out_ptr,
                   q_heads, head_size, rotary_dim, q_stride_t, q_stride_h, k_stride_t,
                   k_stride_h, IS_NEOX: tl.constexpr, BLOCK_PAIRS: tl.constexpr,
                   BLOCK_D: tl.constexpr):
    token = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)
    pairs = rotary_dim // 2
    pos = tl.load(pos_ptr + token)
    i = tl.arange(0, BLOCK_PAIRS)
    cos = tl.load(cos_sin_ptr + pos * rotary_dim + i, mask=i < pairs, other=0.0).to(tl.float32)
    sin = tl.load(cos_sin_ptr + pos * rotary_dim + pairs + i, mask=i < pairs,
                  other=0.0).to(tl.float32)
    if head < q_heads:
        src = q_ptr + token * q_stride_t + head * q_stride_h
        dst = q_out_ptr + (token * q_heads + head) * head_size
    else:
        k_heads_index = head - q_heads
        k_heads = tl.num_programs(1) - q_heads
        src = k_ptr + token * k_stride_t + k_heads_index * k_stride_h
        dst = k_out_ptr + (token * k_heads + k_heads_index) * head_size
    _rotate_head(src, dst, cos, sin, pairs, rotary_dim, head_size, IS_NEOX, BLOCK_PAIRS, BLOCK_D)


def rotary_embedding(positions: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                     cos_sin: torch.Tensor, is_neox: bool) -> tuple[torch.Tensor, torch.Tensor]:
    tokens, q_heads, head_size = q.shape
    q_out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    k_out = torch.empty(k.shape, dtype=k.dtype, device=k.device)
    if tokens:
        rotary_dim = cos_sin.shape[1]
        grid = (tokens, q_heads + k.shape[1])
        _rotary_kernel[grid](
            positions, q, k, cos_sin, q_out, k_out, q_heads, head_size, rotary_dim,
            q.stride(0), q.stride(1), k.stride(0), k.stride(1), IS_NEOX=is_neox,
            BLOCK_PAIRS=triton.next_power_of_2(rotary_dim // 2),
            BLOCK_D=triton.next_power_of_2(max(head_size - rotary_dim, 1)))
    return q_out, k_out
