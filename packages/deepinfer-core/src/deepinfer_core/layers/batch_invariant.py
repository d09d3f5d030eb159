# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Switches a model's layers to their batch-invariant kernels (`EngineConfig.deterministic`).

Batch invariance (a row's bits depend only on its own inputs) needs every reduction on the
path to have an order fixed by the row alone: matmuls with one tile schedule and no split-K,
RMSNorm one row at a time, attention with the same code for cached and fresh keys whatever the
chunking (He et al. 2025, "Defeating Nondeterminism in LLM Inference", Thinking Machines Lab).
Element-wise layers (embedding, RoPE, SiLU-and-mul, residual adds) are invariant already.
"""

from __future__ import annotations

from torch import nn


def set_batch_invariant(model: nn.Module, enabled: bool) -> int:
    """Sets `batch_invariant = enabled` on every submodule that has the attribute.

    Args:
        model: any module tree (Linear, MergedLinear, RMSNorm, PagedAttention, LMHead carry the flag).
        enabled: True for the batch-invariant kernels.

    Returns:
        The number of modules switched (0 means the model has no switchable layer).
    """
    count = 0
    for module in model.modules():
        if hasattr(module, "batch_invariant"):
            module.batch_invariant = enabled
            count += 1
    return count
