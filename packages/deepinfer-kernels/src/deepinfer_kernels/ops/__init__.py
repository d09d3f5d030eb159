# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Every numeric op of the engine, one function per op.

Each op validates its arguments (metadata only, never values), then runs the
implementation the registry selects: the keyword `backend=` names one explicitly; else the
environment variable `DEEPINFER_KERNEL_BACKEND` (e.g. `rms_norm:reference,*:triton`) states a
preference; else the highest-priority available implementation that supports the call; else
`reference`, the pure-torch ground truth that runs on any device.
"""

from __future__ import annotations

from deepinfer_kernels.ops.activation import silu_and_mul
from deepinfer_kernels.ops.attention import (DEFAULT_DECODE_SPLIT_SIZE, paged_attention_decode,
                                             paged_attention_prefill)
from deepinfer_kernels.ops.bitmask import apply_token_bitmask
from deepinfer_kernels.ops.kv_cache import store_kv_cache
from deepinfer_kernels.ops.linear import linear
from deepinfer_kernels.ops.moe import fused_moe
from deepinfer_kernels.ops.norm import rms_norm
from deepinfer_kernels.ops.rope_cache import build_rope_cache
from deepinfer_kernels.ops.rotary import rotary_embedding
from deepinfer_kernels.ops.sampling import keyed_uniforms, sample, sampling_probs

__all__ = [
    "DEFAULT_DECODE_SPLIT_SIZE",
    "apply_token_bitmask",
    "build_rope_cache",
    "fused_moe",
    "keyed_uniforms",
    "linear",
    "paged_attention_decode",
    "paged_attention_prefill",
    "rms_norm",
    "rotary_embedding",
    "sample",
    "sampling_probs",
    "silu_and_mul",
    "store_kv_cache",
]
