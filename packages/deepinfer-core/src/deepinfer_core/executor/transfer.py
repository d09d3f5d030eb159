# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Host-to-device copies that never stall the host behind queued kernels."""

from __future__ import annotations

import torch


def to_device(values: list, dtype: torch.dtype, device: torch.device | str) -> torch.Tensor:
    """A host list as a tensor on `device`.

    On CUDA the copy goes through pinned memory with `non_blocking=True`: a copy from pageable
    memory would wait for every kernel already queued on the stream, which defeats overlapping
    host work with device work (asynchronous scheduling).
    """
    t = torch.tensor(values, dtype=dtype)
    if torch.device(device).type == "cuda":
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device)
