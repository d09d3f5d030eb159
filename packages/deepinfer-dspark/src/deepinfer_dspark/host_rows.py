# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""A drafted round's per-request rows brought to the host in one transfer."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def host_rows(tensors: Sequence[torch.Tensor]) -> list[list]:
    """Per-request 1-D tensors (rows of one device tensor, e.g. a round's draft tokens) as Python
    lists, with one device-to-host transfer when they share a shape (each `.tolist()` of a CUDA
    tensor is a sync: 2 R of them a round at R requests before this), else row by row."""
    if len(tensors) > 1 and len({t.shape for t in tensors}) == 1:
        return torch.stack(list(tensors)).tolist()
    return [t.tolist() for t in tensors]   # (one row: one transfer already, no stack to launch)
