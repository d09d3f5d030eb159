# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Triton paged decode attention, split-KV with a FIXED split size (FlashDecoding, Dao et al.
2023, with the batch-invariant split rule of Thinking Machines' "Defeating Nondeterminism
in LLM Inference", 2025).

Pass 1: one program per (KV head, split, request b) attends ALL query heads of its KV head
(the GQA group, one tile of rows) to keys [split * SPLIT, (split + 1) * SPLIT) of request b,
so each K/V byte is read once, and writes an unnormalised partial (running max m, sum l,
accumulator). Pass 2: program (q head, b) merges the non-empty splits of request b in
chunks of CHUNK splits at fixed boundaries, in increasing order. Both passes depend only on
the request's own length, never on the batch, so a row's output is the same in any batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from deepinfer_kernels.backends.triton.attention_common import dot_precision, upcast_dots


@dataclass(frozen=True)
class DecodeConfig:
    """Launch parameters of pass 1.

    Attributes:
        block_n: keys per tile (capped at the split size).
        num_warps: warps per program.
        num_stages: software-pipeline depth of the key loop.
    """

    block_n: int
    num_warps: int
    num_stages: int


def default_config(device: torch.device) -> DecodeConfig:
    """Small tiles when interpreted; on CUDA the best of benchmarks/tune_decode.py's sweep on an
    H200 (2026-11-29: 75.1 us at batch 8 x 8192 keys, 143.4 us at 64 x 2048, within 0.3 us
    of the best of 14 configurations there; 8 warps and BLOCK_N 16 were clearly slower)."""
    return DecodeConfig(64, 4, 2) if device.type == "cuda" else DecodeConfig(16, 1, 1)


@triton.jit
def _split_kernel(q_ptr, k_cache_ptr, v_cache_ptr, table_ptr, lens_ptr, acc_ptr, m_ptr, l_ptr,
                  scale, window, kv_heads, group, head_size, num_splits, q_stride_b,
                  q_stride_h, table_stride, cache_stride_n, cache_stride_s, cache_stride_h,
                  BLOCK_SIZE: tl.constexpr, SPLIT: tl.constexpr, HAS_WINDOW: tl.constexpr,
                  BLOCK_G: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr,
                  PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    # The KV head is the fastest grid axis: neighbouring programs read the adjacent 256-byte
    # head slices of the same cache rows.
    kv_head, split, b = tl.program_id(0), tl.program_id(1), tl.program_id(2).to(tl.int64)
    seq_len = tl.load(lens_ptr + b)
    lo = split * SPLIT
    hi = tl.minimum(lo + SPLIT, seq_len)
    if HAS_WINDOW:
        lo = tl.maximum(lo, seq_len - window)
    g = tl.arange(0, BLOCK_G)
    d = tl.arange(0, BLOCK_D)
    heads = kv_head * group + g
    g_mask = g < group
    d_mask = d < head_size
    q = tl.load(q_ptr + b * q_stride_b + heads[:, None] * q_stride_h + d[None, :],
                mask=g_mask[:, None] & d_mask[None, :], other=0.0)
    if UPCAST:
        q = q.to(tl.float32)
    m = tl.full([BLOCK_G], float("-inf"), tl.float32)
    l = tl.zeros([BLOCK_G], tl.float32)
    acc = tl.zeros([BLOCK_G, BLOCK_D], tl.float32)
    head_offs = kv_head * cache_stride_h + d[None, :]
    for start in range(lo, hi, BLOCK_N):
        pos = start + tl.arange(0, BLOCK_N)
        p_mask = pos < hi
        page = tl.load(table_ptr + b * table_stride + pos // BLOCK_SIZE, mask=p_mask,
                       other=0)
        rows = page.to(tl.int64) * cache_stride_n + (pos % BLOCK_SIZE) * cache_stride_s
        offs = rows[:, None] + head_offs
        kv_mask = p_mask[:, None] & d_mask[None, :]
        k = tl.load(k_cache_ptr + offs, mask=kv_mask, other=0.0)
        v = tl.load(v_cache_ptr + offs, mask=kv_mask, other=0.0)
        if UPCAST:
            k = k.to(tl.float32)
            v = v.to(tl.float32)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * scale
        s = tl.where(p_mask[None, :], s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        l = l * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
        m = m_new
    # Partials: [B, Hq, num_splits] for m and l, [B, Hq, num_splits, D] for acc.
    part = (b * kv_heads * group + heads) * num_splits + split
    written = g < tl.where(hi > lo, group, 0)        # empty splits are never read
    tl.store(m_ptr + part, m, mask=written)
    tl.store(l_ptr + part, l, mask=written)
    tl.store(acc_ptr + part[:, None] * head_size + d[None, :], acc,
             mask=written[:, None] & d_mask[None, :])


@triton.jit
def _merge_kernel(out_ptr, acc_ptr, m_ptr, l_ptr, lens_ptr, sinks_ptr, window, head_size,
                  num_splits, out_stride_b, out_stride_h, SPLIT: tl.constexpr,
                  HAS_WINDOW: tl.constexpr, HAS_SINKS: tl.constexpr, CHUNK: tl.constexpr,
                  BLOCK_D: tl.constexpr):
    head = tl.program_id(0)
    b = tl.program_id(1).to(tl.int64)
    seq_len = tl.load(lens_ptr + b)
    d = tl.arange(0, BLOCK_D)
    d_mask = d < head_size
    c = tl.arange(0, CHUNK)
    first = 0
    if HAS_WINDOW:
        first = tl.maximum(seq_len - window, 0) // SPLIT
    last = tl.cdiv(seq_len, SPLIT)                   # splits [first, last) are all non-empty
    base = (b * tl.num_programs(0) + head) * num_splits
    m = tl.full([1], float("-inf"), tl.float32)
    l = tl.zeros([1], tl.float32)
    acc = tl.zeros([BLOCK_D], tl.float32)
    # Chunks of CHUNK splits at fixed boundaries, merged in increasing order: the summation
    # order depends on the request's own length only (batch invariant). Within a chunk the
    # splits are loaded at once and reduced as a tile; invalid lanes weigh exactly 0.
    for start in range((first // CHUNK) * CHUNK, last, CHUNK):
        split = start + c
        valid = (split >= first) & (split < last)
        m_s = tl.load(m_ptr + base + split, mask=valid, other=float("-inf"))
        l_s = tl.load(l_ptr + base + split, mask=valid, other=0.0)
        acc_s = tl.load(acc_ptr + (base + split)[:, None] * head_size + d[None, :],
                        mask=valid[:, None] & d_mask[None, :], other=0.0)
        m_c = tl.max(m_s, axis=0)                    # finite: a chunk holds a valid split
        w = tl.exp(m_s - m_c)
        l_c = tl.sum(l_s * w, axis=0)
        acc_c = tl.sum(acc_s * w[:, None], axis=0)
        m_new = tl.maximum(m, m_c)
        alpha = tl.exp(m - m_new)
        beta = tl.exp(m_c - m_new)
        l = l * alpha + l_c * beta
        acc = acc * alpha + acc_c * beta
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


MERGE_CHUNK = 16
"""Splits the merge pass reduces at once (4096 keys at the default split of 256)."""


def paged_attention_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                           block_tables: torch.Tensor, seq_lens: torch.Tensor, scale: float,
                           sliding_window: int | None, sinks: torch.Tensor | None,
                           split_size: int, *, config: DecodeConfig | None = None
                           ) -> torch.Tensor:
    """See `deepinfer_kernels.ops.paged_attention_decode`; `config` overrides the tuning."""
    batch, q_heads, head_size = q.shape
    out = torch.empty_like(q)
    if batch == 0:
        return out
    num_splits = triton.cdiv(block_tables.shape[1] * k_cache.shape[1], split_size)
    partial = torch.empty((2, batch, q_heads, num_splits), dtype=torch.float32, device=q.device)
    acc = torch.empty((batch, q_heads, num_splits, head_size), dtype=torch.float32,
                      device=q.device)
    split_pass(q, k_cache, v_cache, block_tables, seq_lens, scale, sliding_window, split_size,
               acc, partial, config or default_config(q.device))
    merge_pass(out, acc, partial, seq_lens, sliding_window, sinks, split_size)
    return out


def split_pass(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
               block_tables: torch.Tensor, seq_lens: torch.Tensor, scale: float,
               sliding_window: int | None, split_size: int, acc: torch.Tensor,
               partial: torch.Tensor, cfg: DecodeConfig) -> None:
    """Pass 1 into `acc` [B, Hq, splits, D] and `partial` [2 (m, l), B, Hq, splits] (fp32)."""
    batch, q_heads, head_size = q.shape
    _, block_size, kv_heads, _ = k_cache.shape
    group = q_heads // kv_heads
    num_splits = acc.shape[2]
    upcast = upcast_dots(q.device, q.dtype)
    # A split shorter than the tile would only load masked keys: cap the tile at the split.
    block_n = min(cfg.block_n, max(16, triton.next_power_of_2(split_size)))
    _split_kernel[(kv_heads, num_splits, batch)](
        q, k_cache, v_cache, block_tables, seq_lens, acc, partial[0], partial[1], scale,
        sliding_window or 0, kv_heads, group, head_size, num_splits, q.stride(0), q.stride(1),
        block_tables.stride(0), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        BLOCK_SIZE=block_size, SPLIT=split_size, HAS_WINDOW=sliding_window is not None,
        BLOCK_G=max(16, triton.next_power_of_2(group)),
        BLOCK_D=max(16, triton.next_power_of_2(head_size)), BLOCK_N=block_n,
        PRECISION=dot_precision(torch.float32 if upcast else q.dtype), UPCAST=upcast,
        num_warps=cfg.num_warps, num_stages=cfg.num_stages)


def merge_pass(out: torch.Tensor, acc: torch.Tensor, partial: torch.Tensor,
               seq_lens: torch.Tensor, sliding_window: int | None, sinks: torch.Tensor | None,
               split_size: int) -> None:
    """Pass 2: merges the partials of `split_pass` into `out` [B, Hq, D]."""
    batch, q_heads, num_splits, head_size = acc.shape
    _merge_kernel[(q_heads, batch)](
        out, acc, partial[0], partial[1], seq_lens, sinks if sinks is not None else out,
        sliding_window or 0, head_size, num_splits, out.stride(0), out.stride(1),
        SPLIT=split_size, HAS_WINDOW=sliding_window is not None, HAS_SINKS=sinks is not None,
        CHUNK=MERGE_CHUNK, BLOCK_D=max(16, triton.next_power_of_2(head_size)))
