# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The built wheel, installed ALONE (plus torch) into a fresh virtualenv, runs ops.

Builds the wheel from a copy of the package sources (so the checkout stays untouched), then
`python -m venv` (no system site-packages) + `pip install torch==<running version> <wheel>`,
where pip takes torch from the machine's wheel index (a local one on the CPU CI machine), then
runs a script there that checks the compiled `cpu` backend and a few ops against `reference`.
Skips when no index offers that torch (an isolated GPU machine).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
import torch

PACKAGE = Path(__file__).parents[1]
SOURCES = ("pyproject.toml", "VERSION", "README.md", "CMakeLists.txt", "csrc", "src")

SCRIPT = """
import torch, deepinfer_kernels
from deepinfer_kernels import ops
from deepinfer_kernels.testing import assert_matches_reference, op_cases
assert "site-packages" in deepinfer_kernels.__file__, deepinfer_kernels.__file__
for op in ("paged_attention_decode", "apply_token_bitmask"):
    for case in op_cases(op):
        assert_matches_reference(case, "cpu", torch.float32, "cpu")
x = torch.randn(4, 64)
out, res = ops.rms_norm(x, torch.ones(64), 1e-6, torch.randn(4, 64))
assert out.shape == (4, 64) and torch.isfinite(out).all()
t = ops.sample(torch.randn(3, 50), torch.ones(3), torch.zeros(3, dtype=torch.int64),
               torch.ones(3), torch.zeros(3), torch.arange(3), torch.zeros(3, dtype=torch.int64))
assert t.shape == (3,)
print("WHEEL-OK")
"""


def _run(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=900)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.mark.slow
def test_wheel_installs_alone_and_runs(tmp_path):
    source = tmp_path / "src-copy"
    for name in SOURCES:
        origin = PACKAGE / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__",
                                                                                  "*.so"))
        else:
            source.mkdir(exist_ok=True)
            shutil.copy(origin, source / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["HOME"] = str(tmp_path)                     # pip's cache and config stay private
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
          "-w", str(dist), str(source)], env)
    wheel = next(dist.glob("deepinfer_kernels-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("deepinfer_kernels/_cpu_ext") for n in names)
    assert "deepinfer_kernels/backends/cuda/csrc/rms_norm.cu" in names
    assert "deepinfer_kernels/testing/__init__.py" in names
    assert not any(n.startswith("tests/") for n in names)

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    python = str(env_dir / "bin" / "python")
    torch_pin = "torch==" + torch.__version__.split("+")[0]
    proc = subprocess.run([python, "-m", "pip", "install", "-q", torch_pin], capture_output=True,
                          text=True, env=env, timeout=900)
    if proc.returncode != 0 and "No matching distribution" in proc.stderr:
        pytest.skip(f"no package index offers {torch_pin} here")
    assert proc.returncode == 0, proc.stderr[-3000:]
    _run([python, "-m", "pip", "install", "-q", str(wheel)], env)      # + its own dependencies
    out = _run([python, "-c", SCRIPT], env, cwd=tmp_path)
    assert "WHEEL-OK" in out
