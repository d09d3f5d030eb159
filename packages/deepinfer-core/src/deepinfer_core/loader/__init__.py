# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Checkpoint loading: HF folders (safetensors) and GGUF files."""

from __future__ import annotations

from deepinfer_core.loader.checkpoint import iter_weights, load_model_config, resolve_model_path
from deepinfer_core.loader.tokenizer import load_tokenizer

__all__ = ["iter_weights", "load_model_config", "load_tokenizer", "resolve_model_path"]
