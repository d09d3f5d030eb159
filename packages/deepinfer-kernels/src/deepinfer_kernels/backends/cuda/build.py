# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Building and loading the `cuda` backend's shared library.

The .cu sources (csrc/, shipped as package data) export a C ABI and need only the CUDA
toolkit, no torch headers. On first use on a GPU they are compiled with nvcc for that GPU's
architecture (sm_90a on H100/H200, sm_100a on B200, plain sm_XY elsewhere) into
`<cache>/cuda-<hash>.so`, where the hash covers the sources, the flags and the nvcc
version, and the cache is $DEEPINFER_KERNELS_CACHE or ~/.cache/deepinfer/kernels. The library
is then loaded with ctypes. `compile_command` is also what the CPU-only compile test and the
Bazel target run (`nvcc -c` for sm_90a and sm_100a).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

CSRC = Path(__file__).with_name("csrc")
RELEASE_ARCHS = ((9, 0), (10, 0))
"""Architectures the sources must always compile for (checked on CPU machines too)."""

_C_ARGS = {
    # name: ctypes argument types (all return int: 0 = cudaSuccess)
    "deepinfer_store_kv_cache": [ctypes.c_void_p] * 5 + [ctypes.c_int64] * 4
    + [ctypes.c_int, ctypes.c_void_p],
    "deepinfer_rms_norm": [ctypes.c_void_p] * 5 + [ctypes.c_int64] * 2 + [ctypes.c_float]
    + [ctypes.c_int64] * 4 + [ctypes.c_int, ctypes.c_void_p],
    "deepinfer_apply_token_bitmask": [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                                      ctypes.c_uint32, ctypes.c_int, ctypes.c_void_p,
                                      ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64,
                                      ctypes.c_void_p],
}


def sources() -> list[Path]:
    """The .cu translation units, sorted."""
    return sorted(CSRC.glob("*.cu"))


def find_nvcc() -> str | None:
    """$CUDA_HOME/bin/nvcc if present, else nvcc on PATH."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and (Path(home) / "bin" / "nvcc").is_file():
        return str(Path(home) / "bin" / "nvcc")
    return shutil.which("nvcc")


def gencode_flags(capability: tuple[int, int]) -> list[str]:
    """nvcc -gencode flags: arch-specific (`a`) targets for sm_90 and sm_100, else SASS + PTX."""
    major, minor = capability
    arch = f"{major}{minor}"
    if capability in RELEASE_ARCHS:
        return ["-gencode", f"arch=compute_{arch}a,code=sm_{arch}a"]
    return ["-gencode", f"arch=compute_{arch},code=[sm_{arch},compute_{arch}]"]


def compile_command(nvcc: str, output: Path, capabilities: list[tuple[int, int]],
                    files: list[Path], shared: bool) -> list[str]:
    """The nvcc command line: a shared library (`shared`) or one object (`-c`, one file)."""
    flags = [nvcc, "-O3", "-std=c++17", "-I", str(CSRC)]
    for capability in capabilities:
        flags += gencode_flags(capability)
    flags += ["--shared", "-Xcompiler", "-fPIC"] if shared else ["-c"]
    return flags + ["-o", str(output)] + [str(f) for f in files]


def cache_dir() -> Path:
    """Where built libraries are kept."""
    root = os.environ.get("DEEPINFER_KERNELS_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "deepinfer" / "kernels"


def build(capability: tuple[int, int]) -> Path:
    """Compiles the library for `capability` unless a cached copy exists; returns its path.

    Raises:
        RuntimeError: no nvcc, or nvcc failed (its output is in the message).
    """
    nvcc = find_nvcc()
    if nvcc is None:
        raise RuntimeError("cuda backend: nvcc not found (set CUDA_HOME or put nvcc on PATH)")
    digest = hashlib.sha256()
    for path in sorted(CSRC.iterdir()):
        digest.update(path.name.encode() + path.read_bytes())
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    digest.update((version + repr(gencode_flags(capability))).encode())
    target = cache_dir() / f"cuda-{digest.hexdigest()[:20]}.so"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        partial = Path(tmp) / target.name
        cmd = compile_command(nvcc, partial, [capability], sources(), shared=True)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"cuda backend: nvcc failed:\n{' '.join(cmd)}\n{proc.stderr}")
        os.replace(partial, target)  # atomic: concurrent builders never see half a file
    return target


@functools.lru_cache(maxsize=None)
def load(capability: tuple[int, int]) -> ctypes.CDLL:
    """The built library for `capability`, with argument types declared (cached)."""
    library = ctypes.CDLL(str(build(capability)))
    for name, argtypes in _C_ARGS.items():
        function = getattr(library, name)
        function.argtypes = argtypes
        function.restype = ctypes.c_int
    return library
