# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""SwiGLU activation."""

from __future__ import annotations

import torch
from deepinfer_kernels import ops
from torch import nn


class SiluAndMul(nn.Module):
    """`silu(x[:, :I]) * x[:, I:]` for x `[T, 2I]` -> `[T, I]` (SwiGLU, Shazeer 2020)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ops.silu_and_mul(x)
