# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Triton paged prefill attention: FlashAttention-2 style online softmax (Dao 2023) over a
variable-length batch whose keys/values are all read from the paged cache.

Program (tile, head group) owns BLOCK_M rows: TOK_M = BLOCK_M / PACK query tokens of one
request times PACK query heads that share one KV head (grouped-query attention), so each KV
block is loaded once for all PACK heads instead of once per head. PACK is the largest power of
two dividing the group size Hq / Hk, capped so that a tile holds at least 4 tokens. The request
is found without a host sync: request b's tiles start at `cu_seqlens_q[b] // TOK_M + b`, a
non-decreasing sequence searched by bisection (the layout vLLM's Triton attention uses); the
grid `(T // TOK_M + B + 1, Hq / PACK)` covers every tile, and surplus programs do nothing.

Batch invariant for every call: the tile sizes depend on the device only, and each query
sees its keys in BLOCK_N-aligned blocks of absolute positions (0, BLOCK_N, 2 BLOCK_N, ...;
with a window, from the aligned block below the tile's first visible key), masked by
position. Blocks before a query's first visible key leave its running sums at exactly zero
and blocks after its own position add exactly zero with an exact rescale of 1, so a query's
bits do not depend on its place in the tile, on q_len (chunking) or on the other requests:
they equal those of the same query alone with seq_len = position + 1.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from deepinfer_kernels.backends.triton.attention_common import (dot_precision, tile_sizes,
                                                                upcast_dots)


@triton.jit
def _find_request(cu_ptr, num_requests, pid, BLOCK_M: tl.constexpr):
    """Largest b with cu[b] // BLOCK_M + b <= pid (bisection)."""
    lo = 0
    hi = num_requests - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if tl.load(cu_ptr + mid) // BLOCK_M + mid <= pid:
            lo = mid
        else:
            hi = mid - 1
    return lo


@triton.jit
def _prefill_kernel(q_ptr, k_cache_ptr, v_cache_ptr, out_ptr, table_ptr, cu_ptr, lens_ptr,
                    sinks_ptr, scale, window, num_requests, group, head_size,
                    q_stride_t, q_stride_h, out_stride_t, out_stride_h, table_stride,
                    cache_stride_n, cache_stride_s, cache_stride_h, BLOCK_SIZE: tl.constexpr,
                    HAS_WINDOW: tl.constexpr, HAS_SINKS: tl.constexpr, BLOCK_M: tl.constexpr,
                    BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, PRECISION: tl.constexpr,
                    UPCAST: tl.constexpr, PACK: tl.constexpr):
    TOK_M: tl.constexpr = BLOCK_M // PACK
    pid = tl.program_id(0)
    first_head = tl.program_id(1) * PACK
    kv_head = first_head // group
    b = _find_request(cu_ptr, num_requests, pid, TOK_M)
    q_start = tl.load(cu_ptr + b)
    q_len = tl.load(cu_ptr + b + 1) - q_start
    seq_len = tl.load(lens_ptr + b)
    first_row = (pid - (q_start // TOK_M + b)) * TOK_M   # the tile's first token in the request
    r = tl.arange(0, BLOCK_M)
    rows = first_row + r // PACK                      # token of each tile row
    heads = first_head + r % PACK                     # query head of each tile row
    row_mask = rows < q_len
    q_pos = seq_len - q_len + rows                    # absolute position of each query
    d = tl.arange(0, BLOCK_D)
    d_mask = d < head_size
    tokens = (q_start + rows).to(tl.int64)
    q = tl.load(q_ptr + tokens[:, None] * q_stride_t + heads[:, None] * q_stride_h + d[None, :],
                mask=row_mask[:, None] & d_mask[None, :], other=0.0)
    if UPCAST:
        q = q.to(tl.float32)
    # Keys this tile can see: up to its last query, from its first query's window start.
    kv_hi = tl.minimum(seq_len, seq_len - q_len + first_row + TOK_M)
    kv_lo = 0
    if HAS_WINDOW:
        kv_lo = tl.maximum(seq_len - q_len + first_row - window + 1, 0)
        kv_lo = (kv_lo // BLOCK_N) * BLOCK_N     # block boundaries at absolute positions
    kv_hi = tl.where(first_row < q_len, kv_hi, kv_lo)     # surplus programs: no keys
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    for start in range(kv_lo, kv_hi, BLOCK_N):
        pos = start + tl.arange(0, BLOCK_N)
        p_mask = pos < kv_hi
        page = tl.load(table_ptr + b * table_stride + pos // BLOCK_SIZE, mask=p_mask, other=0)
        slots = page.to(tl.int64) * cache_stride_n + (pos % BLOCK_SIZE) * cache_stride_s
        offs = slots[:, None] + kv_head * cache_stride_h + d[None, :]
        kv_mask = p_mask[:, None] & d_mask[None, :]
        k = tl.load(k_cache_ptr + offs, mask=kv_mask, other=0.0)
        if UPCAST:
            k = k.to(tl.float32)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * scale
        visible = (pos[None, :] <= q_pos[:, None]) & p_mask[None, :]
        if HAS_WINDOW:
            visible = visible & (q_pos[:, None] - pos[None, :] < window)
        s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)   # rows with no key yet
        alpha = tl.exp(m - m_safe)
        p = tl.exp(s - m_safe[:, None])
        v = tl.load(v_cache_ptr + offs, mask=kv_mask, other=0.0)
        if UPCAST:
            v = v.to(tl.float32)
        l = l * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
        m = m_new
    if HAS_SINKS:
        sink = tl.load(sinks_ptr + heads).to(tl.float32)
        m_safe = tl.where(m == float("-inf"), sink, m)
        rescale = tl.exp(m - m_safe)
        l = l * rescale + tl.exp(sink - m_safe)
        acc = acc * rescale[:, None]
    out = acc / tl.where(l > 0, l, 1.0)[:, None]
    tl.store(out_ptr + tokens[:, None] * out_stride_t + heads[:, None] * out_stride_h + d[None, :],
             out.to(out_ptr.dtype.element_ty), mask=row_mask[:, None] & d_mask[None, :])


def paged_attention_prefill(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                            block_tables: torch.Tensor, cu_seqlens_q: torch.Tensor,
                            seq_lens: torch.Tensor, scale: float, sliding_window: int | None,
                            sinks: torch.Tensor | None, batch_invariant: bool = False
                            ) -> torch.Tensor:
    tokens, q_heads, head_size = q.shape
    out = torch.empty_like(q)
    num_requests = seq_lens.shape[0]
    if tokens == 0 or num_requests == 0:
        return out
    _, block_size, kv_heads, _ = k_cache.shape
    block_m, block_n = tile_sizes(q.device)
    upcast = upcast_dots(q.device, q.dtype)
    pack = head_pack(q_heads // kv_heads, block_m)
    grid = (tokens // (block_m // pack) + num_requests + 1, q_heads // pack)
    _prefill_kernel[grid](
        q, k_cache, v_cache, out, block_tables, cu_seqlens_q, seq_lens,
        sinks if sinks is not None else q, scale, sliding_window or 0, num_requests,
        q_heads // kv_heads, head_size, q.stride(0), q.stride(1), out.stride(0), out.stride(1),
        block_tables.stride(0), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        BLOCK_SIZE=block_size, HAS_WINDOW=sliding_window is not None,
        HAS_SINKS=sinks is not None, BLOCK_M=block_m, BLOCK_N=block_n,
        BLOCK_D=max(16, triton.next_power_of_2(head_size)),
        PRECISION=dot_precision(torch.float32 if upcast else q.dtype), UPCAST=upcast, PACK=pack)
    return out


def head_pack(group: int, block_m: int) -> int:
    """Query heads per tile: the largest power of two dividing `group`, at most block_m // 4."""
    pack = 1
    while group % (2 * pack) == 0 and 2 * pack <= block_m // 4:
        pack *= 2
    return pack
