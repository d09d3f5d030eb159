# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Shared pytest configuration for the kernel tests."""

from __future__ import annotations

import os

# Before numpy (torch loads it) picks its OpenBLAS kernel: the triton interpreter's `tl.dot` runs
# through numpy, and the Haswell sgemm kernel (picked on AMD EPYC) rounds a row by its place
# in the tile, which breaks the batch-invariance tests; SandyBridge's does not (see tools/python/defs.bzl).
os.environ.setdefault("OPENBLAS_CORETYPE", "SandyBridge")

import pytest  # noqa: E402
import torch  # noqa: E402

# The triton interpreter must be switched on before anything imports triton (transformers
# does): on machines without CUDA, every kernel test process runs triton interpreted.
# (Bazel sets it per test_triton_*.py target; on CUDA machines triton runs natively.)
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_configure(config: pytest.Config) -> None:
    for name, text in (("gpu", "needs a CUDA device"), ("npu", "needs an Ascend NPU"),
                       ("interp", "triton under TRITON_INTERPRET=1 on the CPU"),
                       ("slow", "takes more than a minute")):
        config.addinivalue_line("markers", f"{name}: {text}")
