# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Triton rotary embedding: program (token, 0) rotates all query heads of a token as one
[heads, pairs] tile, program (token, 1) all its key heads; cos/sin are read once per token."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _rotate_heads(src_ptr, dst_ptr, heads, src_stride_h, cos, sin, pairs, rotary_dim,
                  head_size, w_ptr, eps, IS_NEOX: tl.constexpr, BLOCK_H: tl.constexpr,
                  BLOCK_PAIRS: tl.constexpr, BLOCK_D: tl.constexpr, NORM: tl.constexpr):
    h = tl.arange(0, BLOCK_H)[:, None]
    i = tl.arange(0, BLOCK_PAIRS)[None, :]
    h_mask = h < heads
    mask = h_mask & (i < pairs)
    if IS_NEOX:
        first, second = i, i + pairs
    else:
        first, second = 2 * i, 2 * i + 1
    src = src_ptr + h * src_stride_h
    dst = dst_ptr + h * head_size
    x1 = tl.load(src + first, mask=mask, other=0.0)
    x2 = tl.load(src + second, mask=mask, other=0.0)
    x1f, x2f = x1.to(tl.float32), x2.to(tl.float32)
    d = rotary_dim + tl.arange(0, BLOCK_D)[None, :]      # pass-through tail (partial rotary)
    tail = h_mask & (d < head_size)
    xt = tl.load(src + d, mask=tail, other=0.0)
    if NORM:  # per-head RMSNorm over all D values first, rounded once like ops.rms_norm
        xtf = xt.to(tl.float32)
        squares = tl.sum(x1f * x1f + x2f * x2f, axis=1) + tl.sum(xtf * xtf, axis=1)
        rstd = (1.0 / tl.sqrt(squares / head_size + eps))[:, None]
        w1 = tl.load(w_ptr + first, mask=i < pairs, other=0.0).to(tl.float32)
        w2 = tl.load(w_ptr + second, mask=i < pairs, other=0.0).to(tl.float32)
        wt = tl.load(w_ptr + d, mask=d < head_size, other=0.0).to(tl.float32)
        x1f = (x1f * rstd * w1).to(x1.dtype).to(tl.float32)
        x2f = (x2f * rstd * w2).to(x1.dtype).to(tl.float32)
        xt = (xtf * rstd * wt).to(x1.dtype)
    tl.store(dst + first, (x1f * cos - x2f * sin).to(x1.dtype), mask=mask)
    tl.store(dst + second, (x2f * cos + x1f * sin).to(x1.dtype), mask=mask)
    tl.store(dst + d, xt, mask=tail)


@triton.jit
def _rotary_kernel(pos_ptr, q_ptr, k_ptr, cos_sin_ptr, q_out_ptr, k_out_ptr, qw_ptr, kw_ptr, eps,
                   q_heads, k_heads, head_size, rotary_dim, q_stride_t, q_stride_h, k_stride_t,
                   k_stride_h, IS_NEOX: tl.constexpr, BLOCK_HQ: tl.constexpr,
                   BLOCK_HK: tl.constexpr, BLOCK_PAIRS: tl.constexpr, BLOCK_D: tl.constexpr,
                   NORM: tl.constexpr):
    token = tl.program_id(0).to(tl.int64)
    pairs = rotary_dim // 2
    pos = tl.load(pos_ptr + token)
    i = tl.arange(0, BLOCK_PAIRS)[None, :]
    cos = tl.load(cos_sin_ptr + pos * rotary_dim + i, mask=i < pairs, other=0.0).to(tl.float32)
    sin = tl.load(cos_sin_ptr + pos * rotary_dim + pairs + i, mask=i < pairs,
                  other=0.0).to(tl.float32)
    if tl.program_id(1) == 0:
        _rotate_heads(q_ptr + token * q_stride_t, q_out_ptr + token * q_heads * head_size,
                      q_heads, q_stride_h, cos, sin, pairs, rotary_dim, head_size, qw_ptr, eps, IS_NEOX,
                      BLOCK_HQ, BLOCK_PAIRS, BLOCK_D, NORM)
    else:
        _rotate_heads(k_ptr + token * k_stride_t, k_out_ptr + token * k_heads * head_size,
                      k_heads, k_stride_h, cos, sin, pairs, rotary_dim, head_size, kw_ptr, eps, IS_NEOX,
                      BLOCK_HK, BLOCK_PAIRS, BLOCK_D, NORM)


def rotary_embedding(positions: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                     cos_sin: torch.Tensor, is_neox: bool, q_norm_weight: torch.Tensor | None = None,
                     k_norm_weight: torch.Tensor | None = None, norm_eps: float = 0.0
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """See `deepinfer_kernels.ops.rotary_embedding`."""
    norm = q_norm_weight is not None
    tokens, q_heads, head_size = q.shape
    k_heads = k.shape[1]
    q_out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    k_out = torch.empty(k.shape, dtype=k.dtype, device=k.device)
    if tokens:
        rotary_dim = cos_sin.shape[1]
        _rotary_kernel[(tokens, 2)](
            positions, q, k, cos_sin, q_out, k_out, q_norm_weight if norm else q, k_norm_weight if norm else k,
            float(norm_eps), q_heads, k_heads, head_size, rotary_dim,
            q.stride(0), q.stride(1), k.stride(0), k.stride(1), IS_NEOX=is_neox,
            BLOCK_HQ=triton.next_power_of_2(q_heads), BLOCK_HK=triton.next_power_of_2(k_heads),
            BLOCK_PAIRS=triton.next_power_of_2(rotary_dim // 2),
            BLOCK_D=triton.next_power_of_2(max(head_size - rotary_dim, 1)), NORM=norm)
    return q_out, k_out
