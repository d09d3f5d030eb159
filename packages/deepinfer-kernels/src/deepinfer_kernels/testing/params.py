# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Enumerating cases and implementations for a parametrised conformance suite."""

from __future__ import annotations

from collections.abc import Iterable

import torch

from deepinfer_kernels._registry import REFERENCE, default_registry
from deepinfer_kernels.testing.case import OpCase
from deepinfer_kernels.testing.cases_attention import (paged_attention_decode_cases,
                                                       paged_attention_prefill_cases)
from deepinfer_kernels.testing.cases_layers import layer_cases
from deepinfer_kernels.testing.cases_other import other_cases

OPS = ("linear", "rms_norm", "rotary_embedding", "silu_and_mul", "store_kv_cache",
       "paged_attention_prefill", "paged_attention_decode", "fused_moe", "sample",
       "apply_token_bitmask")
"""Every dispatched op of `deepinfer_kernels.ops`."""


def default_device_type() -> str:
    """"cuda" when a CUDA device is present, else "cpu"."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def op_cases(op: str, tag: str | None = None) -> list[OpCase]:
    """The cases of `op`; with `tag`, only those carrying it (e.g. "interp").

    Raises:
        ValueError: unknown `op`.
    """
    if op not in OPS:
        raise ValueError(f"op: {op!r} not in {OPS}")
    if op == "paged_attention_prefill":
        cases = paged_attention_prefill_cases()
    elif op == "paged_attention_decode":
        cases = paged_attention_decode_cases()
    else:
        cases = {**layer_cases(), **other_cases()}[op]
    return [c for c in cases if tag is None or tag in c.tags]


def impls(op: str, device_type: str | None = None, explicit: bool = False) -> list[str]:
    """Non-reference backends of `op` that are available on `device_type`.

    With `explicit`, also those that run there only when named explicitly (triton on the
    CPU under TRITON_INTERPRET=1).
    """
    device_type = device_type or default_device_type()
    names = []
    registry = default_registry()
    for impl in registry.impls.get(op, []):
        if (impl.backend != REFERENCE and impl.runs_on(device_type, explicit)
                and registry.is_available(impl, device_type)):
            names.append(impl.backend)
    return names


def backend_params(device_type: str | None = None, tag: str | None = None,
                   backends: Iterable[str] | None = None, explicit: bool = False,
                   skip_dtypes: Iterable[torch.dtype] = ()) -> list:
    """pytest params `(case, dtype, backend)` over every op, case, dtype and implementation.

    `skip_dtypes` leaves dtypes out (the triton interpreter rounds bfloat16 casts toward
    zero, so interpreted runs skip bfloat16).

    Marks: `gpu` on CUDA devices, `npu` on NPU devices, `interp` for triton on the CPU.
    """
    import pytest

    device_type = device_type or default_device_type()
    wanted = None if backends is None else set(backends)
    skipped = set(skip_dtypes)
    params = []
    for op in OPS:
        for backend in impls(op, device_type, explicit):
            if wanted is not None and backend not in wanted:
                continue
            marks = _marks(device_type, backend)
            impl = default_registry().get(op, backend)
            for case in op_cases(op, tag):
                for dtype in (d for d in case.dtypes if d not in skipped and impl.handles(d)):
                    case_id = f"{case}-{str(dtype).replace('torch.', '')}-{backend}"
                    params.append(pytest.param(case, dtype, backend, id=case_id, marks=marks))
    return params


def _marks(device_type: str, backend: str) -> list:
    import pytest

    if device_type == "cuda":
        return [pytest.mark.gpu]
    if device_type == "npu":
        return [pytest.mark.npu]
    if backend == "triton":
        return [pytest.mark.interp]
    return []
