# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The `reference` backend: plain torch, any device, the executable spec of every op.

Other backends are tested against it. It favours clarity over speed: float32 math,
per-request loops where that is the plainest statement of the semantics.
"""

from __future__ import annotations

from deepinfer_kernels._registry import REFERENCE, Impl, Registry

_OPS = {
    "linear": "linear:linear",
    "rms_norm": "norm:rms_norm",
    "rotary_embedding": "rotary:rotary_embedding",
    "silu_and_mul": "activation:silu_and_mul",
    "store_kv_cache": "kv_cache:store_kv_cache",
    "paged_attention_prefill": "attention:paged_attention_prefill",
    "paged_attention_decode": "attention:paged_attention_decode",
    "fused_moe": "moe:fused_moe",
    "sample": "sampling:sample",
    "apply_token_bitmask": "bitmask:apply_token_bitmask",
}


def register(registry: Registry) -> None:
    """Declares the reference implementation of every op, on every device type."""
    for op, target in _OPS.items():
        registry.register(Impl(op=op, backend=REFERENCE, target=f"{__name__}.{target}",
                               devices=("*",), priority=0))
