# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Argument checks shared by the public ops. Each failure is a ValueError naming the field.

Shape, dtype, device and layout checks look at metadata only. Index VALUES (slots, block ids,
positions, cu_seqlens, row indices, sampling parameters) are checked only for CPU tensors,
where reading them costs no device synchronisation: on the CPU backends (C++ included) a bad
index is an error instead of an out-of-bounds access. On an accelerator the value ranges are
preconditions, as each op's docstring states.
"""

from __future__ import annotations

import math
import numbers
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
    """Checks that all given tensors (None skipped) live on the first one's device (not 'meta')."""
    present = [(n, t) for n, t in names_and_tensors if t is not None]
    first_name, first = present[0]
    if first.device.type == "meta":
        raise ValueError(f"{first_name}: tensors on the 'meta' device hold no data")
    for name, t in present[1:]:
        if t.device != first.device:
            raise ValueError(f"{name}: on device {t.device}, but {first_name} is on {first.device}")


def check_positive(name: str, value: float) -> None:
    """Checks that a scalar is a finite real number > 0 (not a bool, string or tensor)."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Real) or isinstance(value, torch.Tensor)
            or not math.isfinite(value) or not value > 0):
        raise ValueError(f"{name}: must be a finite number > 0, got {value!r}")


def check_flag(name: str, value: object) -> None:
    """Checks that a keyword flag is a real bool (not a tensor or an int)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name}: must be a bool, got {type(value).__name__}")


def check_int(name: str, value: object, minimum: int | None = None) -> None:
    """Checks that a scalar is a Python int (not a bool, float or tensor), optionally >= minimum."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name}: must be an int, got {type(value).__name__} {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}: must be >= {minimum}, got {value}")


def host_values(t: torch.Tensor | None) -> bool:
    """Whether the values of `t` can be checked without a device synchronisation."""
    return t is not None and t.device.type == "cpu" and t.numel() > 0


def check_range(name: str, t: torch.Tensor | None, lo: int | None, hi: int | None) -> None:
    """CPU tensors only: every value in [lo, hi) (None: unbounded on that side)."""
    if not host_values(t):
        return
    low, high = int(t.min()), int(t.max())
    if (lo is not None and low < lo) or (hi is not None and high >= hi):
        bounds = f"[{'-inf' if lo is None else lo}, {'inf' if hi is None else hi})"
        raise ValueError(f"{name}: values must lie in {bounds}, got min {low}, max {high}")


def check_cu_seqlens(cu_seqlens: torch.Tensor, total: int) -> None:
    """CPU tensors only: starts at 0, non-decreasing, ends at `total` (the query rows)."""
    if not host_values(cu_seqlens):
        return
    values = cu_seqlens.tolist()
    if values[0] != 0 or values[-1] != total or any(b < a for a, b in zip(values, values[1:])):
        raise ValueError(f"cu_seqlens_q: must start at 0, be non-decreasing and end at T = {total}, got "
                         f"{values if len(values) <= 8 else values[:4] + ['...'] + values[-2:]}")


def check_paged_tables(block_tables: torch.Tensor, seq_lens: torch.Tensor, num_blocks: int, block_size: int,
                       q_lens: torch.Tensor | None = None) -> None:
    """CPU tensors only: seq_lens >= q_lens (>= 0), fit the table, and the block ids they use exist."""
    if not host_values(seq_lens):
        return
    floor = q_lens if q_lens is not None else torch.zeros_like(seq_lens)
    if bool((seq_lens < floor).any()):
        b = int((seq_lens < floor).nonzero()[0])
        raise ValueError(f"seq_lens: seq_lens[{b}] = {int(seq_lens[b])} is below its query length {int(floor[b])}")
    capacity = block_tables.shape[1] * block_size
    if int(seq_lens.max()) > capacity:
        raise ValueError(f"seq_lens: {int(seq_lens.max())} keys exceed the block table's {block_tables.shape[1]} "
                         f"blocks x {block_size} slots")
    if block_tables.device.type != "cpu" or block_tables.numel() == 0:
        return
    used = (torch.arange(block_tables.shape[1])[None, :]
            < ((seq_lens.to(torch.int64) + block_size - 1) // block_size)[:, None])
    check_range("block_tables", block_tables[used], 0, num_blocks)
