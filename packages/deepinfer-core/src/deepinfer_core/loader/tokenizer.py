# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Tokenizer loading (transformers AutoTokenizer) for HF folders and GGUF files.

For GGUF, transformers builds a fast tokenizer and chat template from the file's metadata
(a few seconds); the result is saved once under `<cache>/tokenizers/` keyed by the file's
path, size and mtime, so later loads read a plain `tokenizer.json`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from transformers import AutoTokenizer, PreTrainedTokenizerBase

from deepinfer_core.assets import cache_dir


def load_tokenizer(path: str | Path, cache_root: Path | None = None) -> PreTrainedTokenizerBase:
    """Loads the tokenizer (with its chat template) of a checkpoint.

    Args:
        path: HF folder (tokenizer.json / tokenizer_config.json) or `.gguf` file.
        cache_root: cache folder for converted GGUF tokenizers (default `assets.cache_dir()`).

    Raises:
        ValueError: the path does not exist or holds no loadable tokenizer (names `tokenizer`).
    """
    path = Path(path).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return _load_gguf_tokenizer(path, cache_root or cache_dir())
    if not path.is_dir():
        raise ValueError(f"tokenizer: {path} is neither a folder nor a .gguf file")
    try:
        return AutoTokenizer.from_pretrained(str(path))
    except (OSError, ValueError) as exc:
        raise ValueError(f"tokenizer: cannot load a tokenizer from {path}: {exc}") from exc


def _load_gguf_tokenizer(path: Path, cache_root: Path) -> PreTrainedTokenizerBase:
    stat = path.resolve().stat()
    key = hashlib.sha256(f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    cached = cache_root / "tokenizers" / f"{path.stem}-{key}"
    if (cached / "tokenizer.json").is_file():
        return AutoTokenizer.from_pretrained(str(cached))
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(f"tokenizer: cannot build a tokenizer from GGUF {path}: {exc}") from exc
    _save_to_cache(tokenizer, cached)
    return tokenizer


def _save_to_cache(tokenizer: PreTrainedTokenizerBase, cached: Path) -> None:
    """Best effort: a read-only or full cache only costs the conversion next time."""
    staging = None
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=cached.parent, prefix=".staging-"))
        tokenizer.save_pretrained(str(staging))
        os.replace(staging, cached)  # atomic; fails harmlessly if a concurrent writer won
    except OSError:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
