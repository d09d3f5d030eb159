# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`OpCase`: one input configuration of one op, built fresh from a seed on any device."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

FLOAT32 = (torch.float32,)
ALL_FLOATS = (torch.float32, torch.float16, torch.bfloat16)
Inputs = tuple[tuple[Any, ...], dict[str, Any]]


@dataclass(frozen=True)
class OpCase:
    """A named input configuration of an op.

    Attributes:
        op: Public op name.
        name: Short id used in test names, e.g. "T7_H96_residual".
        build: `build(dtype, device, generator) -> (args, kwargs)`; values are drawn on the
            CPU from `generator`, then moved to `device`, so every device sees the same
            inputs for the same seed.
        dtypes: Dtypes the case runs in (the dtype of the op's main tensor).
        tags: "interp" marks the tiny cases cheap enough for the triton interpreter.
    """

    op: str
    name: str
    build: Callable[[torch.dtype, torch.device, torch.Generator], Inputs]
    dtypes: tuple[torch.dtype, ...] = ALL_FLOATS
    tags: frozenset[str] = field(default_factory=frozenset)

    def inputs(self, dtype: torch.dtype, device: torch.device | str, seed: int = 0) -> Inputs:
        """Fresh inputs for this case."""
        generator = torch.Generator().manual_seed(seed)
        return self.build(dtype, torch.device(device), generator)

    def __str__(self) -> str:
        return f"{self.op}[{self.name}]"


def randn(gen: torch.Generator, shape: tuple[int, ...], dtype: torch.dtype,
          device: torch.device, scale: float = 1.0) -> torch.Tensor:
    """Standard-normal values times `scale`, drawn on the CPU, cast, then moved."""
    return (torch.randn(shape, generator=gen) * scale).to(dtype).to(device)


def randint(gen: torch.Generator, low: int, high: int, shape: tuple[int, ...],
            dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """Uniform integers in [low, high), drawn on the CPU."""
    return torch.randint(low, high, shape, generator=gen).to(dtype).to(device)


def randperm(gen: torch.Generator, n: int, device: torch.device) -> torch.Tensor:
    """A random permutation of range(n) as int64."""
    return torch.randperm(n, generator=gen).to(device)
