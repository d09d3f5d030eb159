# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The conformance suite every backend runs, shipped in the wheel.

An out-of-tree backend can reuse it:

    @pytest.mark.parametrize("case,dtype,backend", backend_params())
    def test_matches_reference(case, dtype, backend):
        assert_matches_reference(case, backend, dtype, default_device_type())

Imports pytest only inside `backend_params`.
"""

from __future__ import annotations

from deepinfer_kernels.testing.case import OpCase
from deepinfer_kernels.testing.compare import (TOLERANCES, assert_matches_reference,
                                               poison_allocator, tolerance)
from deepinfer_kernels.testing.invariance import (assert_linear_invariant,
                                                  assert_prefill_invariant,
                                                  assert_rms_norm_invariant, linear_variant_sizes)
from deepinfer_kernels.testing.params import (OPS, backend_params, default_device_type, impls,
                                              op_cases)

__all__ = [
    "OPS",
    "OpCase",
    "TOLERANCES",
    "assert_linear_invariant",
    "assert_matches_reference",
    "assert_prefill_invariant",
    "assert_rms_norm_invariant",
    "backend_params",
    "default_device_type",
    "impls",
    "linear_variant_sizes",
    "op_cases",
    "poison_allocator",
    "tolerance",
]
