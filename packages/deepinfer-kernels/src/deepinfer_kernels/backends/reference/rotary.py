# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Reference rotary embedding (see `deepinfer_kernels.ops.rotary_embedding`)."""

from __future__ import annotations

import torch


def rotary_embedding(positions: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                     cos_sin: torch.Tensor, is_neox: bool, q_norm_weight: torch.Tensor | None = None,
                     k_norm_weight: torch.Tensor | None = None, norm_eps: float = 0.0
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    if q_norm_weight is not None:
        q, k = _head_norm(q, q_norm_weight, norm_eps), _head_norm(k, k_norm_weight, norm_eps)
    cos, sin = cos_sin[positions].float().chunk(2, dim=-1)   # [T, R/2] each
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)            # broadcast over heads
    return (_rotate(q, cos, sin, is_neox), _rotate(k, cos, sin, is_neox))


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, is_neox: bool) -> torch.Tensor:
    rotary_dim = 2 * cos.shape[-1]
    rot = x[..., :rotary_dim].float()
    if is_neox:
        x1, x2 = rot.chunk(2, dim=-1)
    else:
        x1, x2 = rot[..., 0::2], rot[..., 1::2]
    o1 = x1 * cos - x2 * sin
    o2 = x2 * cos + x1 * sin
    if is_neox:
        rotated = torch.cat([o1, o2], dim=-1)
    else:
        rotated = torch.stack([o1, o2], dim=-1).flatten(-2)
    return torch.cat([rotated.to(x.dtype), x[..., rotary_dim:]], dim=-1)


def _head_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm over each head's D values: x * rstd * w in float32, rounded once to x's dtype."""
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (xf * rstd * weight.float()).to(x.dtype)
