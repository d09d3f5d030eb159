# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Python side of the `cuda` backend: allocate outputs, call the C ABI on the current stream."""

from __future__ import annotations

import ctypes

import torch

from deepinfer_kernels.backends.cuda.build import load

_DTYPE_CODES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
_RAW = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}


def _library(device: torch.device) -> ctypes.CDLL:
    return load(torch.cuda.get_device_capability(device))


def _stream(device: torch.device) -> int:
    return torch.cuda.current_stream(device).cuda_stream


def _check(status: int, name: str) -> None:
    if status != 0:
        raise RuntimeError(f"cuda backend: {name} launch failed with cudaError {status}")


def _ptr(t: torch.Tensor | None) -> int | None:
    return None if t is None else t.data_ptr()


def store_kv_cache(k: torch.Tensor, v: torch.Tensor, k_cache: torch.Tensor,
                   v_cache: torch.Tensor, slot_mapping: torch.Tensor) -> None:
    tokens, heads, head = k.shape
    if tokens == 0:
        return
    status = _library(k.device).deepinfer_store_kv_cache(
        k.data_ptr(), v.data_ptr(), k_cache.data_ptr(), v_cache.data_ptr(),
        slot_mapping.data_ptr(), tokens, heads * head, k.stride(0), v.stride(0),
        k.element_size(), _stream(k.device))
    _check(status, "store_kv_cache")


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, residual: torch.Tensor | None,
             batch_invariant: bool = False
             ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    rows, hidden = x.shape
    out = torch.empty_like(x)
    res_out = torch.empty_like(x) if residual is not None else None
    if rows:
        status = _library(x.device).deepinfer_rms_norm(
            x.data_ptr(), _ptr(residual), weight.data_ptr(), out.data_ptr(), _ptr(res_out),
            rows, hidden, eps, x.stride(0), residual.stride(0) if residual is not None else 0,
            out.stride(0), res_out.stride(0) if res_out is not None else 0,
            _DTYPE_CODES[x.dtype], _stream(x.device))
        _check(status, "rms_norm")
    return out if residual is None else (out, res_out)


def apply_token_bitmask(logits: torch.Tensor, bitmask: torch.Tensor,
                        indices: torch.Tensor | None) -> None:
    rows = None if indices is None else indices.to(torch.int64).contiguous()
    num_rows = logits.shape[0] if rows is None else rows.shape[0]
    raw = _RAW[logits.dtype]
    neg_inf = int(torch.tensor(float("-inf"), dtype=logits.dtype).view(raw)) & 0xFFFFFFFF
    status = _library(logits.device).deepinfer_apply_token_bitmask(
        logits.data_ptr(), logits.stride(0), logits.shape[1], neg_inf, logits.element_size(),
        bitmask.data_ptr(), bitmask.shape[1], _ptr(rows), num_rows, _stream(logits.device))
    _check(status, "apply_token_bitmask")
