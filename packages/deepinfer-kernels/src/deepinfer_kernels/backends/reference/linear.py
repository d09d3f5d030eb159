# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Reference linear layer (see `deepinfer_kernels.ops.linear`).

`batch_invariant=False` is `torch.nn.functional.linear` (BLAS picks its algorithm by shape,
so a row's bits may change with the number of rows). `batch_invariant=True` is the ground
truth of invariance on any device: one matrix-vector product per row, each on a fresh
float32 copy of the row, so every row goes through a call of the same shape, alignment and
inputs whatever the batch holds. Slow by design.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
           batch_invariant: bool = False) -> torch.Tensor:
    if not batch_invariant:
        return F.linear(x, weight, bias)
    w = weight.float()
    b = None if bias is None else bias.float()
    out = torch.empty((x.shape[0], weight.shape[0]), dtype=torch.float32, device=x.device)
    for t in range(x.shape[0]):
        y = torch.mv(w, x[t].to(torch.float32, copy=True))
        out[t] = y if b is None else y + b
    return out.to(x.dtype)
