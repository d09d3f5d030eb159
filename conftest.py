# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Repository-wide pytest setup, shared by plain `pytest` and `bazel test`.

Under Bazel the environment comes from .bazelrc / .cache/bazelrc; for a plain pytest run
from a clone, the same defaults are filled in here so both behave alike.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parent

if "TEST_SRCDIR" not in os.environ:  # plain pytest (Bazel sets TEST_SRCDIR)
    os.environ.setdefault("DEEPINFER_CACHE", str(_ROOT / ".cache" / "deepinfer"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests marked `gpu` when no CUDA device is visible."""
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    import torch  # only when needed: recipe tests must not pay for importing torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in gpu_items:
        item.add_marker(skip)
