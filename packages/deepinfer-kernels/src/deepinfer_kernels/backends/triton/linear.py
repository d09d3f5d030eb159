# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Triton batch-invariant linear layer: a tiled matmul with one fixed configuration.

Program (tile_m, tile_n, split) computes a BLOCK_M x BLOCK_N tile of `out = x @ weight.T + bias`
over one chunk of K, walking it upward in BLOCK_K steps with a float32 accumulator. The tile
sizes, warps and stages depend on the dtype only, never on T (no autotuning). The K split is
chosen from N, K and the GPU's SM count, never from T (`invariant_splits`: it gives decode-sized
steps of small-N layers enough programs), and the chunks' partial sums are added in split order.
So every output element is reduced in the same order whatever the batch: a row's bits depend on
that row alone (Thinking Machines, "Defeating Nondeterminism in LLM Inference", 2025). Rows past
T are masked to zero and cannot touch the others. float32 inputs use exact IEEE products (no
TF32). The tile configurations were picked on an H200 (NOTES_batch_invariant.md); the split is
not yet measured there.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from deepinfer_kernels.backends.triton.attention_common import dot_precision, upcast_dots
from deepinfer_kernels.backends.triton.gemv import _gemv_reduce_kernel, _num_sms, gemv

GROUP_M = 8
CONFIG_16BIT = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3}
CONFIG_FLOAT32 = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "num_warps": 4, "num_stages": 3}


@triton.jit
def _linear_kernel(x_ptr, w_ptr, b_ptr, out_ptr, tokens, out_features, in_features, chunk,
                   x_stride, w_stride, out_stride, part_stride_s, HAS_BIAS: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   GROUP_M: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
                   SPLIT: tl.constexpr):
    # Tiles in groups of GROUP_M row tiles, column-major inside a group, so programs that run
    # together share weight columns in L2. Only the tile order changes, never a tile's sums.
    tiles_m = tl.cdiv(tokens, BLOCK_M)
    tiles_n = tl.cdiv(out_features, BLOCK_N)
    pid = tl.program_id(0)
    group = pid // (GROUP_M * tiles_n)
    first_m = group * GROUP_M
    group_rows = tl.minimum(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % (GROUP_M * tiles_n)) % group_rows
    tile_n = (pid % (GROUP_M * tiles_n)) // group_rows
    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    row_mask = rows < tokens
    col_mask = cols < out_features
    split = tl.program_id(1)
    k_end = tl.minimum((split + 1) * chunk, in_features)
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for start in range(split * chunk, k_end, BLOCK_K):
        ks = start + tl.arange(0, BLOCK_K)
        k_mask = ks < k_end
        a = tl.load(x_ptr + rows[:, None].to(tl.int64) * x_stride + ks[None, :],
                    mask=row_mask[:, None] & k_mask[None, :], other=0.0)
        b = tl.load(w_ptr + cols[None, :].to(tl.int64) * w_stride + ks[:, None],
                    mask=col_mask[None, :] & k_mask[:, None], other=0.0)      # [BLOCK_K, BLOCK_N]
        if UPCAST:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    mask = row_mask[:, None] & col_mask[None, :]
    if SPLIT:  # a K chunk's partial sum; `_gemv_reduce_kernel` adds the chunks in order
        tl.store(out_ptr + split * part_stride_s + rows[:, None].to(tl.int64) * out_stride + cols[None, :],
                 acc, mask=mask)
    else:
        if HAS_BIAS:
            acc = acc + tl.load(b_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)[None, :]
        tl.store(out_ptr + rows[:, None].to(tl.int64) * out_stride + cols[None, :],
                 acc.to(out_ptr.dtype.element_ty), mask=mask)


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
           batch_invariant: bool = False) -> torch.Tensor:
    if not batch_invariant:  # only offered for T <= 16 (see backends/triton/__init__.py)
        return gemv(x, weight, bias)
    tokens, in_features = x.shape
    out_features = weight.shape[0]
    out = torch.empty((tokens, out_features), dtype=x.dtype, device=x.device)
    if tokens == 0 or out_features == 0:
        return out
    upcast = upcast_dots(x.device, x.dtype)
    config = CONFIG_FLOAT32 if x.dtype == torch.float32 else CONFIG_16BIT
    splits = invariant_splits(out_features, in_features, config["BLOCK_N"], config["BLOCK_K"], _num_sms(x.device))
    chunk = triton.cdiv(triton.cdiv(max(in_features, 1), splits), config["BLOCK_K"]) * config["BLOCK_K"]
    splits = max(1, triton.cdiv(in_features, chunk))
    tiles = triton.cdiv(tokens, config["BLOCK_M"]) * triton.cdiv(out_features, config["BLOCK_N"])
    part = out if splits == 1 else torch.empty((splits, tokens, out_features), dtype=torch.float32, device=x.device)
    _linear_kernel[(tiles, splits)](
        x, weight, bias if bias is not None else x, part, tokens, out_features, in_features, chunk,
        x.stride(0), weight.stride(0), part.stride(-2), 0 if splits == 1 else part.stride(0),
        HAS_BIAS=bias is not None, GROUP_M=GROUP_M, PRECISION=dot_precision(torch.float32 if upcast else x.dtype),
        UPCAST=upcast, SPLIT=splits > 1, **config)
    if splits > 1:
        total = tokens * out_features
        _gemv_reduce_kernel[(triton.cdiv(total, 1024),)](
            part, bias if bias is not None else x, out, total, out_features, splits, part.stride(0),
            HAS_BIAS=bias is not None, BLOCK=1024)
    return out


def invariant_splits(out_features: int, in_features: int, block_n: int, block_k: int, num_sms: int) -> int:
    """K chunks of the invariant matmul: a function of (N, K, the GPU) only, never of T, so every
    row keeps one reduction order. Split only when the N tiles alone leave most SMs idle (decode
    of layers with small N, e.g. o_proj / down_proj), keeping at least 4 BLOCK_K steps a chunk."""
    tiles_n = triton.cdiv(out_features, block_n)
    if 2 * tiles_n >= num_sms:
        return 1
    return max(1, min(triton.cdiv(num_sms, tiles_n), in_features // (4 * block_k)))
