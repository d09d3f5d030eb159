# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Running an implementation against `reference` and comparing the results."""

from __future__ import annotations

from typing import Any

import torch

from deepinfer_kernels import ops
from deepinfer_kernels._registry import default_registry
from deepinfer_kernels.testing.case import OpCase

TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float32: (1e-5, 1e-5),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1e-2, 1e-2),
}
"""(rtol, atol) per dtype of the op's main tensor. Integer outputs must match exactly."""

OP_TOLERANCES: dict[tuple[str, torch.dtype], tuple[float, float]] = {
    # Two GEMMs with an activation rounded to bf16 in between: one bf16 ulp of the
    # intermediate can flip after a different accumulation order.
    ("fused_moe", torch.bfloat16): (2e-2, 2e-2),
}

INPLACE_ARGS: dict[str, tuple[int, ...]] = {
    "store_kv_cache": (2, 3),
    "apply_token_bitmask": (0,),
}
"""Positions of the arguments an op writes in place (compared after the call)."""


def tolerance(op: str, dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) used for `op` in `dtype`."""
    return OP_TOLERANCES.get((op, dtype), TOLERANCES[dtype])


def clone_args(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Copies every tensor argument (so in-place ops run on private inputs)."""
    return tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)


def poison_allocator(device: torch.device | str, max_bytes: int = 1 << 24) -> None:
    """Fills freshly freed memory with 0xFF bytes (NaN as float, -1 as int).

    The CUDA caching allocator hands these blocks to the next allocations, so an
    implementation that leaves part of its `torch.empty` output unwritten returns NaN or -1
    there and fails the comparison. On the CPU this is best effort (the system allocator
    may return fresh zeroed pages).
    """
    size = 512
    blocks = []
    while size <= max_bytes:
        blocks.append(torch.full((size,), 255, dtype=torch.uint8, device=device))
        size *= 2
    del blocks


def outputs(op: str, args: tuple[Any, ...], result: Any) -> list[torch.Tensor]:
    """The tensors an op call produced: its return value(s), then its in-place arguments."""
    if result is None:
        produced: list[torch.Tensor] = []
    elif isinstance(result, torch.Tensor):
        produced = [result]
    else:
        produced = list(result)
    return produced + [args[i] for i in INPLACE_ARGS.get(op, ())]


def assert_matches_reference(case: OpCase, backend: str, dtype: torch.dtype,
                             device: torch.device | str, seed: int = 0) -> None:
    """Runs `case` through `reference` (on clones) and through `backend`, then compares.

    Skips (pytest.skip) when the implementation's `supports` predicate declines the case.

    Raises:
        AssertionError: shapes, dtypes or values differ beyond `tolerance(op, dtype)`; NaN
            anywhere in the implementation's output fails.
    """
    fn = getattr(ops, case.op)
    args, kwargs = case.inputs(dtype, device, seed)
    if not default_registry().get(case.op, backend).supports(*args, **kwargs):
        import pytest

        pytest.skip(f"{backend} does not support {case}")
    ref_args = clone_args(args)
    expected = outputs(case.op, ref_args, fn(*ref_args, backend="reference", **kwargs))
    poison_allocator(device)
    actual = outputs(case.op, args, fn(*args, backend=backend, **kwargs))
    assert len(actual) == len(expected), f"{case}: {len(actual)} outputs, expected {len(expected)}"
    rtol, atol = tolerance(case.op, dtype)
    for i, (got, want) in enumerate(zip(actual, expected)):
        assert got.shape == want.shape, f"{case} output {i}: shape {got.shape} != {want.shape}"
        assert got.dtype == want.dtype, f"{case} output {i}: dtype {got.dtype} != {want.dtype}"
        assert got.device == want.device, f"{case} output {i}: device {got.device}"
        if got.dtype.is_floating_point:
            torch.testing.assert_close(got, want, rtol=rtol, atol=atol,
                                       msg=lambda m: f"{case} [{backend}, {dtype}] output {i}: {m}")
        else:
            assert torch.equal(got, want), f"{case} [{backend}] output {i}: {got} != {want}"
