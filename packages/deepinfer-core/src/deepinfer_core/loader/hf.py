# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Hugging Face checkpoint folders: `config.json` (+ `generation_config.json`) and safetensors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open

from deepinfer_core.config import ModelConfig


def read_json(path: Path) -> dict[str, Any]:
    """Reads a JSON object file.

    Raises:
        ValueError: unreadable or not a JSON object (the message names `model`).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"model: cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"model: {path} must hold a JSON object")
    return data


def load_hf_config(folder: Path) -> ModelConfig:
    """Builds the ModelConfig of an HF checkpoint folder.

    End-of-sequence ids merge `config.json` and `generation_config.json` (chat models often list
    their end-of-turn token only in the latter).

    Raises:
        ValueError: no `config.json`, or a malformed one (the message names `model`).
    """
    config_file = folder / "config.json"
    if not config_file.is_file():
        raise ValueError(f"model: {folder} has no config.json (expected an HF checkpoint folder or a .gguf file)")
    config = read_json(config_file)
    gen_file = folder / "generation_config.json"
    if gen_file.is_file():
        gen_eos = read_json(gen_file).get("eos_token_id")
        eos = config.get("eos_token_id")
        merged = [e for x in (eos, gen_eos) for e in (x if isinstance(x, list) else [x]) if e is not None]
        config = {**config, "eos_token_id": list(dict.fromkeys(merged))}
    return ModelConfig.from_hf_dict(config, folder, "hf")


def iter_hf_weights(folder: Path) -> Iterator[tuple[str, torch.Tensor]]:
    """Yields `(HF name, tensor)` for every tensor of the folder's `*.safetensors` files (CPU).

    Raises:
        ValueError: the folder holds no safetensors file, or a file is truncated or malformed (the
            message names `model`).
    """
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise ValueError(f"model: {folder} has no *.safetensors files (only safetensors checkpoints are supported)")
    for file in files:
        try:
            with safe_open(str(file), framework="pt", device="cpu") as f:
                for name in f.keys():
                    yield name, f.get_tensor(name)  # one tensor at a time: a shard may be many GiB
        except (SafetensorError, OSError) as exc:  # SafetensorError is not a ValueError
            raise ValueError(f"model: {file} is not a readable safetensors file: {exc}") from exc
