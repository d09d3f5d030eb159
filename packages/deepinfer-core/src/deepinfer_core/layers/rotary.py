# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Rotary position embedding (RoPE, Su et al. 2021) with a precomputed cos/sin cache."""

from __future__ import annotations

from typing import Any

import torch
from deepinfer_kernels import ops
from torch import nn


class RotaryEmbedding(nn.Module):
    """Rotates q and k by their positions.

    Args:
        rotary_dim: R, number of leading head dims rotated (R <= D; R == D for these families).
        max_position: P, positions cached (0 .. P-1).
        base: RoPE theta.
        rope_scaling: None or HF rope parameters (`rope_type` in linear / llama3 / yarn, ...).
        is_neox: True for the "rotate half" layout (HF Llama/Qwen), False for interleaved pairs.
        device: cache placement. The cache stays float32 whatever the model dtype; the op
            rotates in float32 and rounds once to the q/k dtype.

    Shapes: positions `[T]` int64, q `[T, Hq, D]`, k `[T, Hk, D]` -> rotated (q, k).
    """

    def __init__(self, rotary_dim: int, max_position: int, base: float, rope_scaling: dict[str, Any] | None,
                 is_neox: bool = True, device: torch.device | str | None = None) -> None:
        super().__init__()
        self.is_neox = is_neox
        cos_sin = ops.build_rope_cache(rotary_dim, max_position, base, rope_scaling, torch.float32, device)
        self.register_buffer("cos_sin", cos_sin, persistent=False)

    def forward(self, positions: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                q_norm: nn.Module | None = None, k_norm: nn.Module | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotates q and k; with `q_norm`/`k_norm` (per-head `RMSNorm`s of size D, Qwen3), each head
        is normalised first, in the same kernel."""
        if q_norm is None:
            return ops.rotary_embedding(positions, q, k, self.cos_sin, self.is_neox)
        return ops.rotary_embedding(positions, q, k, self.cos_sin, self.is_neox, q_norm_weight=q_norm.weight,
                                    k_norm_weight=k_norm.weight, norm_eps=q_norm.eps)
