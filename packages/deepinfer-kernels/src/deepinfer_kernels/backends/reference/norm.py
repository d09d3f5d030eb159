# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Reference RMSNorm (see `deepinfer_kernels.ops.rms_norm`).

With `batch_invariant=True` the mean square is a pairwise tree of elementwise additions
(`row_sum`): every step is an exact IEEE elementwise op, so a row's bits cannot depend on
the other rows on any device (a library reduction may split rows differently by shape).
"""

from __future__ import annotations

import torch


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, residual: torch.Tensor | None,
             batch_invariant: bool = False
             ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    if residual is not None:
        x = (x.float() + residual.float()).to(x.dtype)
    xf = x.float()
    squares = xf * xf
    if batch_invariant:
        mean_sq = (row_sum(squares) / x.shape[1]).unsqueeze(1)
    else:
        mean_sq = squares.mean(dim=-1, keepdim=True)
    out = (xf * torch.rsqrt(mean_sq + eps) * weight.float()).to(x.dtype)
    return out if residual is None else (out, x)


def row_sum(v: torch.Tensor) -> torch.Tensor:
    """Sum over the last dim of [T, H] float32 by pairwise halving: [T], one fixed order per row.

    The row is zero-padded to a power of two (adding +0.0 is exact), then its two halves are
    added elementwise until one column is left.
    """
    width = 1 << max(v.shape[1] - 1, 0).bit_length()
    v = torch.nn.functional.pad(v, (0, width - v.shape[1]))
    while width > 1:
        width //= 2
        v = v[:, :width] + v[:, width:]
    return v[:, 0]
