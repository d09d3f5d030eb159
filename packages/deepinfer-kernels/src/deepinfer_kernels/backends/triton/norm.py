# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Triton RMSNorm: one program per row (batch invariant: a row's reduction order is fixed)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _rms_norm_kernel(x_ptr, res_ptr, w_ptr, out_ptr, res_out_ptr, hidden, eps,
                     x_stride, res_stride, out_stride, res_out_stride,
                     HAS_RESIDUAL: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < hidden
    x = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=0.0)
    if HAS_RESIDUAL:
        r = tl.load(res_ptr + row * res_stride + offs, mask=mask, other=0.0)
        x = (x.to(tl.float32) + r.to(tl.float32)).to(x.dtype)   # the rounded residual stream
        tl.store(res_out_ptr + row * res_out_stride + offs, x, mask=mask)
    xf = x.to(tl.float32)
    mean_sq = tl.sum(xf * xf, axis=0) / hidden
    normed = xf * (1.0 / tl.sqrt(mean_sq + eps))
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    out = (normed * w.to(tl.float32)).to(x.dtype)
    tl.store(out_ptr + row * out_stride + offs, out, mask=mask)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, residual: torch.Tensor | None,
             batch_invariant: bool = False
             ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    # NOTE: one program per row and BLOCK from the hidden size alone: batch invariant always.
    tokens, hidden = x.shape
    out = torch.empty_like(x)
    res_out = torch.empty_like(x) if residual is not None else out
    if tokens:
        res = residual if residual is not None else x
        _rms_norm_kernel[(tokens,)](
            x, res, weight, out, res_out, hidden, eps, x.stride(0), res.stride(0),
            out.stride(0), res_out.stride(0), HAS_RESIDUAL=residual is not None,
            BLOCK=triton.next_power_of_2(hidden))
    return out if residual is None else (out, res_out)
