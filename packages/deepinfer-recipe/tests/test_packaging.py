# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The package imports without torch and installs alone into a fresh virtualenv."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]


def test_import_does_not_pull_torch_or_tokenizers():
    code = "import sys, deepinfer_recipe; print('torch' in sys.modules, 'tokenizers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_wheel_installs_alone_in_fresh_venv(tmp_path):
    """``pip wheel --no-deps`` from a copy of the sources, then install into a plain venv
    (no system site packages); pip fetches the one declared dependency, jinja2."""
    source = tmp_path / "source"
    shutil.copytree(PACKAGE / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "VERSION", "README.md"):
        shutil.copy(PACKAGE / name, source / name)
    env = {**os.environ, "HOME": str(tmp_path), "PIP_NO_CACHE_DIR": "1"}
    wheels = tmp_path / "wheels"
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels)]
    subprocess.run([*build, str(source)], check=True, capture_output=True, timeout=300, env=env)
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    python = env_dir / "bin" / "python"
    wheel = next(wheels.glob("deepinfer_recipe-*.whl"))
    install = [str(python), "-m", "pip", "install", "-q", str(wheel)]
    subprocess.run(install, check=True, capture_output=True, timeout=300, env=env)
    code = (
        "import sys, deepinfer_recipe as r\n"
        "c = r.Conversation((r.Message('user', 'hi'),))\n"
        "print(r.encode_chat(c, 'deepseek_v4').text)\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True, timeout=120)
    assert out.stdout.splitlines() == ["<｜begin▁of▁sentence｜><｜User｜>hi<｜Assistant｜></think>", "False"]
