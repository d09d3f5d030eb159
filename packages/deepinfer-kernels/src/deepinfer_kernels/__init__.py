# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""DeepInfer kernels: one op API (`deepinfer_kernels.ops`) over several backends.

Importing this package is cheap: it imports torch only, never triton, a compiled
extension or torch_npu, and it never initialises a GPU. Backends are declared on the first
op call and loaded when first chosen.
"""

from __future__ import annotations

from deepinfer_kernels import ops

__all__ = ["ops"]
