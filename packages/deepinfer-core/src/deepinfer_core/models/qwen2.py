# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Qwen2 / Qwen2.5 family: the shared decoder with q/k/v bias (always on for Qwen2).

`ModelConfig.from_hf_dict` sets `qkv_bias` (and clears `o_bias`) for model_type "qwen2"
because Qwen2 configs do not carry the key. Sliding-window attention (`use_sliding_window`) is not supported.
"""

from __future__ import annotations

from deepinfer_core.models.decoder import DecoderForCausalLM


class Qwen2ForCausalLM(DecoderForCausalLM):
    """Qwen2 decoder; see `DecoderForCausalLM` for the forward/load contract."""

    architectures = ("Qwen2ForCausalLM",)
    qk_norm = False
