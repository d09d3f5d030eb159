# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Triton SiLU-and-multiply."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _silu_and_mul_kernel(x_ptr, out_ptr, inter, x_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < inter
    gate = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_ptr + row * x_stride + inter + offs, mask=mask, other=0.0).to(tl.float32)
    out = gate / (1.0 + tl.exp(-gate)) * up
    tl.store(out_ptr + row * out_stride + offs, out.to(out_ptr.dtype.element_ty), mask=mask)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    tokens, inter = x.shape[0], x.shape[1] // 2
    out = torch.empty((tokens, inter), dtype=x.dtype, device=x.device)
    if tokens and inter:
        grid = (tokens, triton.cdiv(inter, BLOCK))
        _silu_and_mul_kernel[grid](x, out, inter, x.stride(0), out.stride(0), BLOCK=BLOCK)
    return out
