# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The CUDA sources compile with nvcc for sm_90a and sm_100a, on any machine with nvcc (no GPU
needed): the same command line the backend uses at first use on a GPU, with `-c`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from deepinfer_kernels.backends.cuda.build import (RELEASE_ARCHS, compile_command, find_nvcc,
                                                   gencode_flags, sources)

NVCC = find_nvcc()


def test_gencode_flags():
    assert gencode_flags((9, 0)) == ["-gencode", "arch=compute_90a,code=sm_90a"]
    assert gencode_flags((10, 0)) == ["-gencode", "arch=compute_100a,code=sm_100a"]
    assert gencode_flags((8, 9)) == ["-gencode", "arch=compute_89,code=[sm_89,compute_89]"]


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
@pytest.mark.parametrize("source", [s.name for s in sources()])
def test_cuda_source_compiles_for_sm90a_and_sm100a(source, tmp_path):
    path = next(s for s in sources() if s.name == source)
    obj = tmp_path / (path.stem + ".o")
    cmd = compile_command(NVCC, obj, list(RELEASE_ARCHS), [path], shared=False)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert obj.stat().st_size > 0
    cuobjdump = shutil.which("cuobjdump") or shutil.which("cuobjdump", path=str(Path(NVCC).parent))
    if cuobjdump is not None:                       # not every toolkit install has it
        listing = subprocess.run([cuobjdump, "--list-elf", str(obj)], capture_output=True,
                                 text=True, check=True)
        assert "sm_90a" in listing.stdout and "sm_100a" in listing.stdout
