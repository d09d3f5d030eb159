# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Maps HF `architectures` names to model classes."""

from __future__ import annotations

import torch

from deepinfer_core.config import ModelConfig
from deepinfer_core.models.decoder import DecoderForCausalLM
from deepinfer_core.models.llama import LlamaForCausalLM
from deepinfer_core.models.qwen2 import Qwen2ForCausalLM
from deepinfer_core.models.qwen3 import Qwen3ForCausalLM

_FAMILIES: tuple[type[DecoderForCausalLM], ...] = (LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM)
MODEL_CLASSES: dict[str, type[DecoderForCausalLM]] = {
    arch: cls for cls in _FAMILIES for arch in cls.architectures
}


def supported_architectures() -> list[str]:
    """The HF architecture names DeepInfer can run, sorted."""
    return sorted(MODEL_CLASSES)


def get_model_class(architecture: str) -> type[DecoderForCausalLM]:
    """The model class for an HF architecture name.

    Raises:
        ValueError: the architecture is not supported (the message lists the supported ones).
    """
    if architecture not in MODEL_CLASSES:
        raise ValueError(f"model: architecture {architecture!r} is not supported; "
                         f"supported: {supported_architectures()}")
    return MODEL_CLASSES[architecture]


def build_model(cfg: ModelConfig, dtype: torch.dtype, device: torch.device | str) -> DecoderForCausalLM:
    """Instantiates (without weights) the model for `cfg.architecture` in eval mode."""
    return get_model_class(cfg.architecture)(cfg, dtype, device).eval()
