# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Batch invariance of the triton kernels (linear, rms_norm, prefill attention) on the CPU
through the triton interpreter (TRITON_INTERPRET=1, set by Bazel for test_triton_*.py and by
tests/conftest.py on machines without CUDA). bfloat16 is skipped: the interpreter rounds its
casts toward zero. On a GPU, tests/test_batch_invariant.py runs the same checks natively.
"""

from __future__ import annotations

import pytest
import torch

from deepinfer_kernels.backends.triton import interpreter_active
from deepinfer_kernels.testing import (assert_linear_invariant, assert_prefill_invariant,
                                       assert_rms_norm_invariant)

pytestmark = pytest.mark.skipif(not interpreter_active(), reason="needs triton with "
                                "TRITON_INTERPRET=1 set before triton's first import")
DTYPES = [pytest.param(d, id=str(d)[6:]) for d in (torch.float32, torch.float16)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_triton_linear_row_is_batch_invariant(dtype):
    # 65 rows: two BLOCK_M tiles; K = 203: a partial BLOCK_K step.
    assert_linear_invariant("triton", dtype, "cpu", 203, 37, bias=True, seed=7)


@pytest.mark.parametrize("dtype", DTYPES)
def test_triton_rms_norm_row_is_batch_invariant(dtype):
    assert_rms_norm_invariant("triton", dtype, "cpu", hidden=96, residual=True, seed=8,
                              sizes=(2, 5, 33))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("window, sinks", [(None, False), (5, True), (19, False)])
def test_triton_prefill_queries_are_batch_and_chunk_invariant(dtype, window, sinks):
    # 23 queries over 16-row tiles and 16-key blocks; windows not multiples of BLOCK_N.
    assert_prefill_invariant("triton", dtype, "cpu", length=23, window=window, sinks=sinks,
                             seed=9)


@pytest.mark.parametrize("dtype", DTYPES)
def test_triton_linear_with_a_k_split_is_batch_invariant_and_matches_the_reference(dtype):
    # K = 600 and one N tile: the interpreter's 4 "SMs" make the kernel split K in 2 chunks.
    from deepinfer_kernels import ops
    from deepinfer_kernels.backends.triton.linear import CONFIG_16BIT, CONFIG_FLOAT32, invariant_splits

    config = CONFIG_FLOAT32 if dtype == torch.float32 else CONFIG_16BIT
    assert invariant_splits(37, 600, config["BLOCK_N"], config["BLOCK_K"], 4) == 2
    assert_linear_invariant("triton", dtype, "cpu", 600, 37, bias=True, seed=11)
    gen = torch.Generator().manual_seed(12)
    x = torch.randn(9, 600, generator=gen).to(dtype)
    w = (torch.randn(37, 600, generator=gen) / 600 ** 0.5).to(dtype)
    b = torch.randn(37, generator=gen).to(dtype)
    got = ops.linear(x, w, b, batch_invariant=True, backend="triton")
    want = ops.linear(x, w, b, backend="reference")
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    torch.testing.assert_close(got.float(), want.float(), rtol=tol, atol=tol)
