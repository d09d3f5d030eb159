# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Reference token-bitmask apply (see `deepinfer_kernels.ops.apply_token_bitmask`)."""

from __future__ import annotations

import torch


def apply_token_bitmask(logits: torch.Tensor, bitmask: torch.Tensor,
                        indices: torch.Tensor | None) -> None:
    vocab = logits.shape[1]
    rows = (torch.arange(logits.shape[0], device=logits.device) if indices is None
            else indices.long())
    shifts = torch.arange(32, dtype=torch.int32, device=bitmask.device)
    bits = (bitmask[rows].unsqueeze(-1) >> shifts) & 1          # [B', W, 32], LSB first
    allowed = bits.flatten(1)[:, :vocab].bool()
    logits[rows] = logits[rows].masked_fill(~allowed, float("-inf"))
