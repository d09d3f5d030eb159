# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Batch invariance (`batch_invariant=True`) of linear, rms_norm and prefill attention on the
default device (CPU here: reference and the C++ `cpu` backend; on a GPU the same file checks
triton and cuda). A fixed row must give identical bits alone and inside batches of random
neighbours; a request's queries identical bits in one call, in random chunks and one by one.
The negative control shows that the default GEMM path does change a row's bits with the batch
size, so these comparisons can fail. Values are compared against torch in float64 as well.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from deepinfer_kernels import ops
from deepinfer_kernels._registry import default_registry
from deepinfer_kernels.backends.reference.norm import row_sum
from deepinfer_kernels.testing import (assert_linear_invariant, assert_prefill_invariant,
                                       assert_rms_norm_invariant, default_device_type, impls,
                                       linear_variant_sizes)

DEVICE = default_device_type()
DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def _params(op: str, dtypes=DTYPES) -> list:
    params = []
    for backend in ["reference"] + impls(op, DEVICE):
        impl = default_registry().get(op, backend)
        params += [pytest.param(backend, d, id=f"{backend}-{str(d)[6:]}") for d in dtypes
                   if impl.handles(d)]
    return params


@pytest.mark.parametrize("backend, dtype", _params("linear"))
@pytest.mark.parametrize("in_features, out_features, bias", [(203, 37, True), (576, 96, False)])
def test_linear_row_is_batch_invariant(backend, dtype, in_features, out_features, bias):
    assert_linear_invariant(backend, dtype, DEVICE, in_features, out_features, bias, seed=1)


def test_linear_negative_control_default_path_depends_on_batch():
    changed = linear_variant_sizes(torch.float32, DEVICE)
    if not changed:
        pytest.skip("this torch build's F.linear happens to be batch invariant for these "
                    "shapes: the negative control has nothing to show")
    assert changed                          # e.g. BLAS: a GEMV for one row, a GEMM for more


@pytest.mark.parametrize("backend, dtype", _params("linear"))
def test_linear_matches_float64(backend, dtype):
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(19, 300, generator=gen)
    w = torch.randn(45, 300, generator=gen) * 300 ** -0.5
    b = torch.randn(45, generator=gen)
    xd, wd, bd = (t.to(dtype) for t in (x, w, b))
    want = F.linear(xd.double(), wd.double(), bd.double())
    got = ops.linear(xd.to(DEVICE), wd.to(DEVICE), bd.to(DEVICE), batch_invariant=True,
                     backend=backend)
    tol = {torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 1e-2}[dtype]
    torch.testing.assert_close(got.cpu().double(), want, rtol=tol, atol=tol)


@pytest.mark.skipif("cpu" not in impls("linear", "cpu"), reason="C++ cpu linear not available")
def test_cpu_linear_does_not_depend_on_thread_count():
    gen = torch.Generator().manual_seed(3)
    x, w = torch.randn(37, 576, generator=gen), torch.randn(577, 576, generator=gen)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = ops.linear(x, w, batch_invariant=True, backend="cpu")
        torch.set_num_threads(2)
        two = ops.linear(x, w, batch_invariant=True, backend="cpu")
    finally:
        torch.set_num_threads(before)
    assert torch.equal(one, two)


@pytest.mark.parametrize("backend, dtype", _params("rms_norm"))
@pytest.mark.parametrize("residual", [False, True])
def test_rms_norm_row_is_batch_invariant(backend, dtype, residual):
    assert_rms_norm_invariant(backend, dtype, DEVICE, hidden=576, residual=residual, seed=4)


def test_reference_row_sum_matches_float64():
    gen = torch.Generator().manual_seed(5)
    for width in (1, 2, 7, 576, 1000):
        v = torch.randn(3, width, generator=gen)
        torch.testing.assert_close(row_sum(v).double(), v.double().sum(-1), rtol=1e-5,
                                   atol=1e-5)


@pytest.mark.parametrize("backend, dtype", _params("paged_attention_prefill",
                                                   (torch.float32, torch.bfloat16)))
@pytest.mark.parametrize("window, sinks", [(None, False), (5, True), (16, False)])
def test_prefill_queries_are_batch_and_chunk_invariant(backend, dtype, window, sinks):
    assert_prefill_invariant(backend, dtype, DEVICE, length=37, window=window, sinks=sinks,
                             seed=6)


@pytest.mark.parametrize("backend", ["reference"] + impls("paged_attention_prefill", DEVICE))
def test_prefill_rejects_seq_len_shorter_than_queries(backend):
    q = torch.randn(3, 2, 16, device=DEVICE)
    cache = torch.randn(2, 4, 1, 16, device=DEVICE)
    args = (q, cache, cache.clone(), torch.zeros(1, 2, dtype=torch.int32, device=DEVICE),
            torch.tensor([0, 3], dtype=torch.int32, device=DEVICE),
            torch.tensor([2], dtype=torch.int32, device=DEVICE), 0.25)
    if backend not in ("reference", "cpu"):
        pytest.skip(f"{backend} does not read seq_lens on the host")
    with pytest.raises(ValueError, match="^seq_lens"):
        ops.paged_attention_prefill(*args, batch_invariant=True, backend=backend)


def test_batch_invariant_must_be_a_bool():
    with pytest.raises(ValueError, match="^batch_invariant"):
        ops.linear(torch.randn(2, 4), torch.randn(3, 4), batch_invariant=1)
    with pytest.raises(ValueError, match="^batch_invariant"):
        ops.rms_norm(torch.randn(2, 4), torch.ones(4), 1e-6, batch_invariant=None)
