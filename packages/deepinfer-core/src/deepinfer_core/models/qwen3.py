# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Qwen3 dense family: the shared decoder with per-head RMSNorm on q and k before RoPE."""

from __future__ import annotations

from deepinfer_core.models.decoder import DecoderForCausalLM


class Qwen3ForCausalLM(DecoderForCausalLM):
    """Qwen3 decoder; see `DecoderForCausalLM` for the forward/load contract."""

    architectures = ("Qwen3ForCausalLM",)
    qk_norm = True
