# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""DeepInfer kernels: one op API (`deepinfer_kernels.ops`) over several backends.

Importing this package is cheap: it imports torch only, never triton, a compiled
extension or torch_npu, and it never initialises a GPU. Backends are declared on the first
op call and loaded when first chosen.
"""

from __future__ import annotations

from typing import Any

from deepinfer_kernels import ops

__all__ = ["ops", "selected_backend"]


def selected_backend(op: str, *args: Any, backend: str | None = None, **kwargs: Any) -> str:
    """The backend `ops.<op>(*args, backend=backend, **kwargs)` would run, without running it.

    Selection follows the order of `deepinfer_kernels._registry` (explicit `backend`, then
    `DEEPINFER_KERNEL_BACKEND`, then priority among available backends that support the
    arguments, then `reference`); the device and dtype are those of `args[0]`, the op's first
    tensor argument.

    Args:
        op: a public op name, e.g. "rms_norm".
        *args, **kwargs: the op's arguments (the first positional one must be a tensor).
        backend: as the op's `backend` keyword.

    Returns:
        The backend name, e.g. "triton".

    Raises:
        ValueError: `op` is unknown, `args[0]` is not a tensor, or `backend` cannot run the call.
    """
    import torch

    from deepinfer_kernels._registry import default_registry

    registry = default_registry()
    if op not in registry.impls:
        raise ValueError(f"op: unknown op {op!r} (known: {sorted(registry.impls)})")
    if not args or not isinstance(args[0], torch.Tensor):
        raise ValueError(f"args: the first argument of {op!r} must be a tensor")
    key = args[0]
    return registry.select(op, key.device, key.dtype, args, kwargs, backend).backend
