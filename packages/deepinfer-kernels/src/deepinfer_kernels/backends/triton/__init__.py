# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The `triton` backend: Triton kernels for NVIDIA GPUs (written for SM90/SM100, plain
Triton, so they also run on older GPUs and, through the interpreter, on the CPU).

Automatic selection uses it on CUDA devices only. On the CPU it runs only when named
explicitly (`backend="triton"` or the environment variable) and only under
TRITON_INTERPRET=1, which is how the CPU test suite exercises it. Nothing here imports
triton; the kernel modules do, when first chosen.
"""

from __future__ import annotations

import importlib.util
import os

import torch

from deepinfer_kernels._registry import Impl, Registry

PRIORITY = 20

_OPS = {
    "linear": "linear:linear",
    "rms_norm": "norm:rms_norm",
    "silu_and_mul": "activation:silu_and_mul",
    "rotary_embedding": "rotary:rotary_embedding",
    "store_kv_cache": "kv_cache:store_kv_cache",
    "apply_token_bitmask": "bitmask:apply_token_bitmask",
    "paged_attention_decode": "decode_attention:paged_attention_decode",
    "paged_attention_prefill": "prefill_attention:paged_attention_prefill",
    "fused_moe": "moe:fused_moe",
    "sample": "sampling:sample",
}


def interpreter_active() -> bool:
    """Whether triton kernels run in the interpreter in this process.

    NOTE: TRITON_INTERPRET=1 only takes effect if set before triton is first imported
    (triton's own `tl.sum` & co. are decorated at import); importing triton after setting it
    late leaves a half-interpreted, broken mode, which this probe detects.
    """
    if os.environ.get("TRITON_INTERPRET") != "1" or importlib.util.find_spec("triton") is None:
        return False
    import triton.language.standard as standard
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(standard.sum, InterpretedFunction)


def available(device_type: str) -> bool:
    """Triton importable and: a CUDA GPU of compute capability >= 8.0, or the interpreter."""
    if importlib.util.find_spec("triton") is None:
        return False
    if device_type == "cpu":
        return interpreter_active()
    if device_type == "cuda":
        return torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0)
    return False


def _unit_stride(*tensors: torch.Tensor | None) -> bool:
    return all(t is None or t.shape[-1] <= 1 or t.stride(-1) == 1 for t in tensors)


def _supports_rows(x: torch.Tensor, *rest) -> bool:
    return _unit_stride(x)


GEMV_ENV = "DEEPINFER_TRITON_GEMV"
GEMV_MAX_ROWS = 16


def _supports_linear(x, weight, bias, batch_invariant=False) -> bool:
    # The invariant calls (fixed-tile matmul); and, opted in by DEEPINFER_TRITON_GEMV=1 until its
    # H200 measurement is recorded, decode-sized calls (skinny split-K matmul, gemv.py). Other
    # calls: the vendor GEMM (reference F.linear) is faster.
    if not _unit_stride(x, weight, bias):
        return False
    return batch_invariant or (x.shape[0] <= GEMV_MAX_ROWS and os.environ.get(GEMV_ENV) == "1")


def _supports_rms_norm(x, weight, eps, residual, batch_invariant=False) -> bool:
    # One program per row whatever T: invariant either way.
    return _unit_stride(x, weight, residual) and x.shape[1] <= 65536


def _supports_rotary(positions, q, k, cos_sin, is_neox, q_norm_weight=None, k_norm_weight=None,
                     norm_eps=0.0) -> bool:
    return _unit_stride(q, k, q_norm_weight, k_norm_weight) and cos_sin.is_contiguous()


def _heads_packed(t: torch.Tensor) -> bool:
    """A [T, H, D] tensor whose per-token [H, D] block is contiguous."""
    return t.numel() == 0 or ((t.shape[2] <= 1 or t.stride(2) == 1)
                              and (t.shape[1] <= 1 or t.stride(1) == t.shape[2]))


def _supports_store(k, v, k_cache, v_cache, slot_mapping) -> bool:
    return (_heads_packed(k) and _heads_packed(v) and k_cache.is_contiguous()
            and v_cache.is_contiguous())


def _supports_bitmask(logits, bitmask, indices) -> bool:
    return _unit_stride(logits) and bitmask.is_contiguous()


def _supports_attention(q, k_cache, v_cache, *rest, batch_invariant=False) -> bool:
    return (_unit_stride(q) and k_cache.is_contiguous() and v_cache.is_contiguous()
            and q.shape[2] <= 256)


def _supports_moe(hidden, router_logits, w13, w2, top_k, scoring, bias, *rest,
                  batch_invariant=False) -> bool:
    """Routing keeps a token's E scores in registers: E <= 1024, top_k <= 64."""
    return (_unit_stride(hidden, router_logits, w13, w2, bias)
            and router_logits.shape[1] <= 1024 and top_k <= 64)


def _supports_sample(logits, *rest) -> bool:
    return _unit_stride(logits) and all(t.is_contiguous() for t in rest)


_SUPPORTS = {
    "linear": _supports_linear,
    "rms_norm": _supports_rms_norm,
    "silu_and_mul": _supports_rows,
    "rotary_embedding": _supports_rotary,
    "store_kv_cache": _supports_store,
    "apply_token_bitmask": _supports_bitmask,
    "paged_attention_decode": _supports_attention,
    "paged_attention_prefill": _supports_attention,
    "fused_moe": _supports_moe,
    "sample": _supports_sample,
}


# Selected only when named (backend="triton" or DEEPINFER_KERNEL_BACKEND): the last revision of the
# sampler kernel has not yet run on a GPU, and at batch 1 with top-k/top-p it was slower than the
# reference on the H200 (packages/deepinfer-kernels/BENCHMARKS.md).
_EXPLICIT_ONLY = {"sample"}


def register(registry: Registry) -> None:
    """Declares the triton implementations (CUDA automatically, CPU explicitly)."""
    for op, target in _OPS.items():
        auto = () if op in _EXPLICIT_ONLY else ("cuda",)
        registry.register(Impl(op=op, backend="triton", target=f"{__name__}.{target}",
                               devices=auto, explicit_devices=("cuda", "cpu"), priority=PRIORITY,
                               available=available, supports=_SUPPORTS[op]))
