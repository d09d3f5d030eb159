# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Llama family (Llama 2/3, SmolLM2, Mistral-style dense): the shared decoder, no q/k norm.

Optional q/k/v/o biases follow `attention_bias`, MLP biases `mlp_bias`; RoPE scaling (linear, llama3,
yarn) comes from the config's rope parameters.
"""

from __future__ import annotations

from deepinfer_core.models.decoder import DecoderForCausalLM


class LlamaForCausalLM(DecoderForCausalLM):
    """Llama decoder; see `DecoderForCausalLM` for the forward/load contract."""

    architectures = ("LlamaForCausalLM",)
    qk_norm = False
