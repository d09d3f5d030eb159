# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Triton skinny matmul for decode at small batch: `out = x @ weight.T + bias` with T <= 16 rows.

At T = 1..16 a decode-step Linear is a matrix-vector product: it must stream the whole weight
matrix once, so its speed is the memory bandwidth it reaches. The H200 profile of batch-1
decode (repository BENCHMARKS.md) shows the vendor GEMM at about a third of copy bandwidth on
Qwen3-0.6B's matrices (1-13 MB each). This kernel covers the weight with enough programs to
keep every SM streaming:

  pass 1  program (tile_n, split) loads W[tile_n * BN : +BN, K-chunk `split`] in BK-wide
          slices (contiguous along K, so coalesced) and accumulates `x_chunk @ W_chunk.T` in
          float32 with one tensor-core dot per slice (x padded to 16 rows by masking);
  pass 2  when the K range is split (small N), a second kernel adds the S partial sums in
          split order, then the bias, and casts.

The split count S and tile sizes are chosen from (N, K, SM count), never from T, so a row's
result does not depend on the other rows of the call. It does differ in rounding from a
large-T matmul, so deterministic mode (which needs one kernel for every T) does not use it.
The triton backend offers it for non-invariant calls of T <= 16 rows only when the environment
sets `DEEPINFER_TRITON_GEMV=1`, until an H200 measurement against the vendor GEMM is recorded
in BENCHMARKS.md (`benchmarks/bench_ops.py --ops linear`).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from deepinfer_kernels.backends.triton.attention_common import dot_precision, upcast_dots

MAX_ROWS = 16
BLOCK_N = 64
BLOCK_K = 128


@triton.jit
def _gemv_partial_kernel(x_ptr, w_ptr, b_ptr, out_ptr, tokens, out_features, in_features, chunk,
                         x_stride, w_stride, out_stride_s, out_stride_t, HAS_BIAS: tl.constexpr,
                         DIRECT: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         BLOCK_K: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    tile_n = tl.program_id(0)
    split = tl.program_id(1)
    rows = tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    row_mask = rows < tokens
    col_mask = cols < out_features
    k_end = tl.minimum((split + 1) * chunk, in_features)
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for start in range(split * chunk, k_end, BLOCK_K):
        ks = start + tl.arange(0, BLOCK_K)
        k_mask = ks < k_end
        a = tl.load(x_ptr + rows[:, None] * x_stride + ks[None, :],
                    mask=row_mask[:, None] & k_mask[None, :], other=0.0)
        b = tl.load(w_ptr + cols[None, :].to(tl.int64) * w_stride + ks[:, None],
                    mask=col_mask[None, :] & k_mask[:, None], other=0.0)       # [BLOCK_K, BLOCK_N]
        if UPCAST:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    mask = row_mask[:, None] & col_mask[None, :]
    if DIRECT:  # one split: finish here
        if HAS_BIAS:
            acc = acc + tl.load(b_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)[None, :]
        tl.store(out_ptr + rows[:, None] * out_stride_t + cols[None, :], acc.to(out_ptr.dtype.element_ty),
                 mask=mask)
    else:
        tl.store(out_ptr + split * out_stride_s + rows[:, None] * out_stride_t + cols[None, :], acc, mask=mask)


@triton.jit
def _gemv_reduce_kernel(part_ptr, b_ptr, out_ptr, total, out_features, splits, part_stride_s,
                        HAS_BIAS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    acc = tl.zeros([BLOCK], tl.float32)
    for s in range(0, splits):  # split order: fixed
        acc += tl.load(part_ptr + s * part_stride_s + offs, mask=mask, other=0.0)
    if HAS_BIAS:
        acc += tl.load(b_ptr + offs % out_features, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=mask)


def num_splits(out_features: int, in_features: int, num_sms: int) -> int:
    """Splits of K so that (N / BLOCK_N) x S programs give about two per SM, each with at least
    two BLOCK_K slices of work; 1 when the N tiles alone fill the GPU."""
    tiles = triton.cdiv(out_features, BLOCK_N)
    wanted = triton.cdiv(2 * num_sms, tiles)
    return max(1, min(wanted, in_features // (2 * BLOCK_K)))


def _num_sms(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4  # the interpreter: small, but still exercises the split path


def gemv(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """`x @ weight.T + bias` for `x` [T <= 16, K], `weight` [N, K] (unit stride along K).

    Returns:
        [T, N] in `x.dtype` (float32 accumulation).

    Raises:
        ValueError: more than MAX_ROWS rows.
    """
    tokens, in_features = x.shape
    if tokens > MAX_ROWS:
        raise ValueError(f"x: the skinny matmul takes at most {MAX_ROWS} rows, got {tokens}")
    out_features = weight.shape[0]
    out = torch.empty((tokens, out_features), dtype=x.dtype, device=x.device)
    if tokens == 0 or out_features == 0:
        return out
    if in_features == 0:
        return out.zero_() if bias is None else out.copy_(bias.expand_as(out))
    upcast = upcast_dots(x.device, x.dtype)
    splits = num_splits(out_features, in_features, _num_sms(x.device))
    chunk = triton.cdiv(triton.cdiv(in_features, splits), BLOCK_K) * BLOCK_K
    splits = triton.cdiv(in_features, chunk)
    direct = splits == 1
    part = out if direct else torch.empty((splits, tokens, out_features), dtype=torch.float32, device=x.device)
    grid = (triton.cdiv(out_features, BLOCK_N), splits)
    _gemv_partial_kernel[grid](
        x, weight, bias if bias is not None else x, part, tokens, out_features, in_features, chunk,
        x.stride(0), weight.stride(0), 0 if direct else part.stride(0), part.stride(-2),
        HAS_BIAS=bias is not None, DIRECT=direct, BLOCK_M=MAX_ROWS, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
        PRECISION=dot_precision(torch.float32 if upcast else x.dtype), UPCAST=upcast, num_warps=4, num_stages=4)
    if not direct:
        total = tokens * out_features
        block = 1024
        _gemv_reduce_kernel[(triton.cdiv(total, block),)](
            part, bias if bias is not None else x, out, total, out_features, splits, part.stride(0),
            HAS_BIAS=bias is not None, BLOCK=block)
    return out
