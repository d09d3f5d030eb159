# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""RMSNorm (Zhang & Sennrich 2019), optionally fused with the residual add."""

from __future__ import annotations

import torch
from deepinfer_kernels import ops
from torch import nn


class RMSNorm(nn.Module):
    """`x / sqrt(mean(x^2) + eps) * weight`, computed by `ops.rms_norm`.

    Args:
        hidden_size: H, the normalised (last) dimension.
        eps: added to the mean square.
        dtype, device: parameter placement.

    Shapes: x `[..., H]`. With `residual` given, returns `(norm(x + residual), x + residual)`
    so a decoder layer carries the running sum without an extra pass. Attribute
    `batch_invariant` (set by `set_batch_invariant`) asks for a per-row-invariant kernel.
    """

    def __init__(self, hidden_size: int, eps: float, dtype: torch.dtype | None = None,
                 device: torch.device | str | None = None) -> None:
        super().__init__()
        self.eps = eps
        self.batch_invariant = False
        self.weight = nn.Parameter(torch.ones(hidden_size, dtype=dtype, device=device), requires_grad=False)

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None
                ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        if residual is None:
            return ops.rms_norm(flat, self.weight, self.eps, batch_invariant=self.batch_invariant).reshape(shape)
        out, summed = ops.rms_norm(flat, self.weight, self.eps, residual.reshape(-1, shape[-1]),
                                     batch_invariant=self.batch_invariant)
        return out.reshape(shape), summed.reshape(shape)
