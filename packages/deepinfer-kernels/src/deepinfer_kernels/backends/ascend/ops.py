# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Ascend implementations: thin calls into torch_npu's fused operators."""

from __future__ import annotations

import torch
import torch_npu


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, residual: torch.Tensor | None,
             batch_invariant: bool = False
             ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    if residual is not None:
        x = (x.float() + residual.float()).to(x.dtype)     # the rounded residual stream
    out = torch_npu.npu_rms_norm(x, weight, epsilon=eps)[0]
    return out if residual is None else (out, x)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    return torch_npu.npu_swiglu(x, dim=-1)
