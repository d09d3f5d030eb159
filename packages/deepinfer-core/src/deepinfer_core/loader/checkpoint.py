# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""One front door for checkpoints: resolve the path, read the config, stream the weights."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import torch

from deepinfer_core.assets import default_model_path
from deepinfer_core.config import ModelConfig
from deepinfer_core.loader.gguf import GGUFCheckpoint
from deepinfer_core.loader.hf import iter_hf_weights, load_hf_config


def resolve_model_path(model: str | Path | None) -> Path:
    """The checkpoint path for `model`; None means the default model (downloaded on first use).

    Raises:
        ValueError: the path does not exist, or is a file that is not `.gguf` (names `model`).
    """
    if model is None:
        return default_model_path()
    path = Path(model).expanduser()
    if not path.exists():
        raise ValueError(f"model: {path} does not exist (expected an HF checkpoint folder or a .gguf file)")
    if path.is_file() and path.suffix != ".gguf":
        raise ValueError(f"model: {path} is a file but not a .gguf checkpoint")
    return path


def load_model_config(model: str | Path | None) -> ModelConfig:
    """Reads the ModelConfig of an HF folder or GGUF file (None: the default model).

    Raises:
        ValueError: missing or malformed checkpoint, unsupported GGUF architecture (names `model`).
    """
    path = resolve_model_path(model)
    if path.is_file():
        return GGUFCheckpoint(path).model_config()
    return load_hf_config(path)


def iter_weights(cfg: ModelConfig) -> Iterator[tuple[str, torch.Tensor]]:
    """Yields `(HF name, CPU tensor)` pairs of the checkpoint `cfg` was read from."""
    if cfg.format == "gguf":
        return GGUFCheckpoint(cfg.path).iter_weights()
    return iter_hf_weights(cfg.path)
