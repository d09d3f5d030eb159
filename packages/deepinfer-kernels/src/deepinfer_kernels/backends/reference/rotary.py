# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Reference rotary embedding (see `deepinfer_kernels.ops.rotary_embedding`)."""

from __future__ import annotations

import torch


def rotary_embedding(positions: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                     cos_sin: torch.Tensor, is_neox: bool) -> tuple[torch.Tensor, torch.Tensor]:
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
