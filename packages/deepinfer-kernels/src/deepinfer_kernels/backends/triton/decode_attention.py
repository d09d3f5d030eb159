# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Triton paged decode attention, split-KV with a FIXED split size (FlashDecoding, Dao et al.
2023, with the batch-invariant split rule of Thinking Machines' "Defeating Nondeterminism
in LLM Inference", 2025).

Pass 1: program (b, kv head, split) attends the query heads of one KV head to keys
[split * SPLIT, (split + 1) * SPLIT) of request b and writes an unnormalised partial
(running max m, sum l, accumulator). Pass 2: program (b, q head) merges the non-empty
splits of request b in increasing order. Both passes depend only on the request's own
length, never on the batch, so a row's output is the same in any batch.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from deepinfer_kernels.backends.triton.attention_common import (dot_precision, tile_sizes,
                                                                upcast_dots)


@triton.jit
def _split_kernel(q_ptr, k_cache_ptr, v_cache_ptr, table_ptr, lens_ptr, acc_ptr, m_ptr, l_ptr,
                  scale, window, group, head_size, num_splits, q_stride_b, q_stride_h,
                  table_stride, cache_stride_n, cache_stride_s, cache_stride_h,
                  BLOCK_SIZE: tl.constexpr, SPLIT: tl.constexpr, HAS_WINDOW: tl.constexpr,
                  BLOCK_G: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr,
                  PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    kv_head = tl.program_id(1)
    split = tl.program_id(2)
    seq_len = tl.load(lens_ptr + b)
    g = tl.arange(0, BLOCK_G)
    d = tl.arange(0, BLOCK_D)
    heads = kv_head * group + g
    g_mask = g < group
    d_mask = d < head_size
    q = tl.load(q_ptr + b * q_stride_b + heads[:, None] * q_stride_h + d[None, :],
                mask=g_mask[:, None] & d_mask[None, :], other=0.0)
    if UPCAST:
        q = q.to(tl.float32)
    lo = split * SPLIT
    hi = tl.minimum(lo + SPLIT, seq_len)
    if HAS_WINDOW:
        lo = tl.maximum(lo, seq_len - window)
    m = tl.full([BLOCK_G], float("-inf"), tl.float32)
    l = tl.zeros([BLOCK_G], tl.float32)
    acc = tl.zeros([BLOCK_G, BLOCK_D], tl.float32)
    for start in range(lo, hi, BLOCK_N):
        pos = start + tl.arange(0, BLOCK_N)
        p_mask = pos < hi
        page = tl.load(table_ptr + b * table_stride + pos // BLOCK_SIZE, mask=p_mask, other=0)
        rows = page.to(tl.int64) * cache_stride_n + (pos % BLOCK_SIZE) * cache_stride_s
        offs = rows[:, None] + kv_head * cache_stride_h + d[None, :]
        kv_mask = p_mask[:, None] & d_mask[None, :]
        k = tl.load(k_cache_ptr + offs, mask=kv_mask, other=0.0)
        if UPCAST:
            k = k.to(tl.float32)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * scale
        s = tl.where(p_mask[None, :], s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        v = tl.load(v_cache_ptr + offs, mask=kv_mask, other=0.0)
        if UPCAST:
            v = v.to(tl.float32)
        l = l * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
        m = m_new
    # Partials: [B, Hq, num_splits] for m and l, [B, Hq, num_splits, D] for acc.
    part = (b * tl.num_programs(1) * group + heads) * num_splits + split
    written = g < tl.where(hi > lo, group, 0)        # empty splits are never read
    tl.store(m_ptr + part, m, mask=written)
    tl.store(l_ptr + part, l, mask=written)
    tl.store(acc_ptr + part[:, None] * head_size + d[None, :], acc,
             mask=written[:, None] & d_mask[None, :])


@triton.jit
def _merge_kernel(out_ptr, acc_ptr, m_ptr, l_ptr, lens_ptr, sinks_ptr, window, head_size,
                  num_splits, out_stride_b, out_stride_h, SPLIT: tl.constexpr,
                  HAS_WINDOW: tl.constexpr, HAS_SINKS: tl.constexpr, BLOCK_D: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)
    seq_len = tl.load(lens_ptr + b)
    d = tl.arange(0, BLOCK_D)
    d_mask = d < head_size
    first = 0
    if HAS_WINDOW:
        first = tl.maximum(seq_len - window, 0) // SPLIT
    last = tl.cdiv(seq_len, SPLIT)
    base = (b * tl.num_programs(1) + head) * num_splits
    m = tl.full([1], float("-inf"), tl.float32)
    l = tl.zeros([1], tl.float32)
    acc = tl.zeros([BLOCK_D], tl.float32)
    for split in range(first, last):                 # fixed order: batch invariant
        m_s = tl.load(m_ptr + base + split + tl.zeros([1], tl.int32))
        l_s = tl.load(l_ptr + base + split + tl.zeros([1], tl.int32))
        acc_s = tl.load(acc_ptr + (base + split) * head_size + d, mask=d_mask, other=0.0)
        m_new = tl.maximum(m, m_s)
        alpha = tl.exp(m - m_new)
        beta = tl.exp(m_s - m_new)
        l = l * alpha + l_s * beta
        acc = acc * alpha + acc_s * beta
        m = m_new
    if HAS_SINKS:
        sink = tl.load(sinks_ptr + head + tl.zeros([1], tl.int32)).to(tl.float32)
        m_safe = tl.where(m == float("-inf"), sink, m)
        scale_old = tl.exp(m - m_safe)
        l = l * scale_old + tl.exp(sink - m_safe)
        acc = acc * scale_old
    out = tl.where(l > 0, acc / tl.where(l > 0, l, 1.0), 0.0)
    tl.store(out_ptr + b * out_stride_b + head * out_stride_h + d,
             out.to(out_ptr.dtype.element_ty), mask=d_mask)


def paged_attention_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                           block_tables: torch.Tensor, seq_lens: torch.Tensor, scale: float,
                           sliding_window: int | None, sinks: torch.Tensor | None,
                           split_size: int) -> torch.Tensor:
    batch, q_heads, head_size = q.shape
    out = torch.empty_like(q)
    if batch == 0:
        return out
    _, block_size, kv_heads, _ = k_cache.shape
    group = q_heads // kv_heads
    num_splits = triton.cdiv(block_tables.shape[1] * block_size, split_size)
    partial = torch.empty((batch, q_heads, num_splits), dtype=torch.float32, device=q.device)
    m_part, l_part = partial, torch.empty_like(partial)
    acc_part = torch.empty((batch, q_heads, num_splits, head_size), dtype=torch.float32,
                           device=q.device)
    block_d = max(16, triton.next_power_of_2(head_size))
    upcast = upcast_dots(q.device, q.dtype)
    _, block_n = tile_sizes(q.device)
    window = sliding_window or 0
    _split_kernel[(batch, kv_heads, num_splits)](
        q, k_cache, v_cache, block_tables, seq_lens, acc_part, m_part, l_part, scale, window,
        group, head_size, num_splits, q.stride(0), q.stride(1), block_tables.stride(0),
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2), BLOCK_SIZE=block_size,
        SPLIT=split_size, HAS_WINDOW=sliding_window is not None,
        BLOCK_G=max(16, triton.next_power_of_2(group)), BLOCK_D=block_d, BLOCK_N=block_n,
        PRECISION=dot_precision(torch.float32 if upcast else q.dtype), UPCAST=upcast)
    _merge_kernel[(batch, q_heads)](
        out, acc_part, m_part, l_part, seq_lens, sinks if sinks is not None else q, window,
        head_size, num_splits, out.stride(0), out.stride(1), SPLIT=split_size,
        HAS_WINDOW=sliding_window is not None, HAS_SINKS=sinks is not None, BLOCK_D=block_d)
    return out
