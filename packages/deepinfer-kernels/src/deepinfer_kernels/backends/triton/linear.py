# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Triton batch-invariant linear layer: a tiled matmul with one fixed configuration.

Program (tile_m, tile_n) computes a BLOCK_M x BLOCK_N tile of `out = x @ weight.T + bias`,
walking K from 0 upward in BLOCK_K steps with a float32 accumulator. The tile sizes, warps
and stages depend on the dtype only, never on T (no autotuning, no split-K), so every output
element is reduced in the same order whatever the batch: a row's bits depend on that row
alone (Thinking Machines, "Defeating Nondeterminism in LLM Inference", 2025). Rows past T
are masked to zero and cannot touch the others. float32 inputs use exact IEEE products (no
TF32). The configurations were picked on an H200 (NOTES_batch_invariant.md).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from deepinfer_kernels.backends.triton.attention_common import dot_precision, upcast_dots
from deepinfer_kernels.backends.triton.gemv import gemv

GROUP_M = 8
CONFIG_16BIT = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3}
CONFIG_FLOAT32 = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "num_warps": 4, "num_stages": 3}


@triton.jit
def _linear_kernel(x_ptr, w_ptr, b_ptr, out_ptr, tokens, out_features, in_features,
                   x_stride, w_stride, out_stride, HAS_BIAS: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   GROUP_M: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr):
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
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for start in range(0, in_features, BLOCK_K):
        ks = start + tl.arange(0, BLOCK_K)
        k_mask = ks < in_features
        a = tl.load(x_ptr + rows[:, None].to(tl.int64) * x_stride + ks[None, :],
                    mask=row_mask[:, None] & k_mask[None, :], other=0.0)
        b = tl.load(w_ptr + cols[None, :].to(tl.int64) * w_stride + ks[:, None],
                    mask=col_mask[None, :] & k_mask[:, None], other=0.0)      # [BLOCK_K, BLOCK_N]
        if UPCAST:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    if HAS_BIAS:
        acc = acc + tl.load(b_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)[None, :]
    tl.store(out_ptr + rows[:, None].to(tl.int64) * out_stride + cols[None, :],
             acc.to(out_ptr.dtype.element_ty), mask=row_mask[:, None] & col_mask[None, :])


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
    tiles = triton.cdiv(tokens, config["BLOCK_M"]) * triton.cdiv(out_features, config["BLOCK_N"])
    grid = (tiles,)
    _linear_kernel[grid](
        x, weight, bias if bias is not None else x, out, tokens, out_features, in_features,
        x.stride(0), weight.stride(0), out.stride(0), HAS_BIAS=bias is not None,
        GROUP_M=GROUP_M, PRECISION=dot_precision(torch.float32 if upcast else x.dtype),
        UPCAST=upcast, **config)
    return out
