# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Argument checks shared by the public ops. Each failure is a ValueError naming the field.

The checks look at metadata only (shape, dtype, device): they never read tensor values, so
they never synchronise with a GPU.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def check_tensor(name: str, t: object, ndim: int | None = None,
                 dtypes: Sequence[torch.dtype] | None = None) -> torch.Tensor:
    """Checks that `t` is a tensor with `ndim` dimensions and one of `dtypes`."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if ndim is not None and t.dim() != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions, got shape {tuple(t.shape)}")
    if dtypes is not None and t.dtype not in dtypes:
        names = ", ".join(str(d).replace("torch.", "") for d in dtypes)
        raise ValueError(f"{name}: dtype {str(t.dtype).replace('torch.', '')} not in ({names})")
    return t


def check_size(name: str, t: torch.Tensor, dim: int, expected: int, what: str) -> None:
    """Checks `t.shape[dim] == expected`, where `what` names the expected quantity."""
    if t.shape[dim] != expected:
        raise ValueError(f"{name}: dimension {dim} is {t.shape[dim]}, expected {expected} ({what})")


def check_same_device(names_and_tensors: Sequence[tuple[str, torch.Tensor | None]]) -> None:
    """Checks that all given tensors (None skipped) live on the first one's device."""
    present = [(n, t) for n, t in names_and_tensors if t is not None]
    first_name, first = present[0]
    for name, t in present[1:]:
        if t.device != first.device:
            raise ValueError(f"{name}: on device {t.device}, but {first_name} is on {first.device}")


def check_positive(name: str, value: float) -> None:
    """Checks that a scalar is > 0."""
    if not value > 0:
        raise ValueError(f"{name}: must be > 0, got {value}")


def check_flag(name: str, value: object) -> None:
    """Checks that a keyword flag is a real bool (not a tensor or an int)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name}: must be a bool, got {type(value).__name__}")
