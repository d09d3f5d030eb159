# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The conformance suite: every available non-reference backend of every op, on the default
device (CUDA when present, else the CPU), against `reference` on fresh random inputs.

On a CPU machine this covers the `cpu` backend; on an H200 the same file covers `triton`
and `cuda`. Triton on the CPU runs under the interpreter in tests/test_triton_*.py.
"""

from __future__ import annotations

import pytest

from deepinfer_kernels.testing import assert_matches_reference, backend_params, default_device_type

DEVICE = default_device_type()


@pytest.mark.parametrize("case, dtype, backend", backend_params(DEVICE))
def test_matches_reference(case, dtype, backend):
    for seed in (0, 1):
        assert_matches_reference(case, backend, dtype, DEVICE, seed=seed)
