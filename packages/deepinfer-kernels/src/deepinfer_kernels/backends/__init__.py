# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Backend packages. Each exposes `register(registry)`, which declares its `Impl`s.

Declaring is cheap: no backend imports its toolchain (triton, a compiled extension,
torch_npu) until one of its implementations is chosen, except `ascend`, which declares
nothing unless `torch_npu` is importable. Out-of-tree backends plug in through the
entry-point group `deepinfer_kernels.backends`; each entry point names a
`register(registry)` function.
"""

from __future__ import annotations

import logging
from importlib import metadata

from deepinfer_kernels._registry import Registry

logger = logging.getLogger("deepinfer_kernels")

ENTRY_POINT_GROUP = "deepinfer_kernels.backends"
BUILTIN = ("reference", "triton", "cuda", "cpu", "ascend")


def build_registry(load_plugins: bool = True) -> Registry:
    """A fresh `Registry` holding the built-in backends (and entry-point plug-ins)."""
    import importlib

    registry = Registry()
    for name in BUILTIN:
        importlib.import_module(f"deepinfer_kernels.backends.{name}").register(registry)
    if load_plugins:
        for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
            try:
                entry.load()(registry)
            except Exception:  # a broken plug-in must not break the reference path
                logger.exception("kernel backend plug-in %r failed to register", entry.name)
    return registry
