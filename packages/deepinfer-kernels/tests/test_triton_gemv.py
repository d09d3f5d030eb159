# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The triton skinny matmul (decode-sized `ops.linear`, backends/triton/gemv.py) against the
reference, through the interpreter on the CPU (natively on a GPU): fresh random inputs, poisoned
outputs, split and unsplit K, partial tiles, bias, and row independence."""

from __future__ import annotations

import pytest
import torch

from deepinfer_kernels import ops, selected_backend
from deepinfer_kernels.backends import triton as triton_backend
from deepinfer_kernels.backends.triton import gemv as gemv_module

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
pytestmark = pytest.mark.skipif(DEVICE == "cpu" and not triton_backend.interpreter_active(),
                                reason="needs a GPU or TRITON_INTERPRET=1 set before triton's first import")
TOL = {torch.float32: 1e-5, torch.float16: 1e-2, torch.bfloat16: 1e-2}


@pytest.fixture(autouse=True)
def gemv_opt_in(monkeypatch):
    monkeypatch.setenv(triton_backend.GEMV_ENV, "1")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("tokens,in_features,out_features,bias", [
    (1, 1000, 70, True),      # K split (few N tiles), partial last K slice and N tile
    (3, 256, 130, False),     # K = 2 slices: one split, direct store
    (16, 515, 64, True),      # the largest row count, odd K
    (5, 96, 3, False),        # K below one slice
])
def test_matches_reference(dtype, tokens, in_features, out_features, bias):
    gen = torch.Generator().manual_seed(tokens * 1000 + in_features)
    x = torch.randn(tokens, in_features, generator=gen).to(DEVICE, dtype)
    w = (torch.randn(out_features, in_features, generator=gen) / in_features ** 0.5).to(DEVICE, dtype)
    b = torch.randn(out_features, generator=gen).to(DEVICE, dtype) if bias else None
    assert selected_backend("linear", x, w, b, backend="triton") == "triton"   # offered (opted in)
    if DEVICE == "cuda":
        assert selected_backend("linear", x, w, b) == "triton"                 # and chosen automatically
    want = ops.linear(x, w, b, backend="reference")
    got = ops.linear(x, w, b, backend="triton")
    assert got.dtype == dtype and got.shape == want.shape
    torch.testing.assert_close(got.float(), want.float(), rtol=TOL[dtype], atol=TOL[dtype])


def test_split_path_is_exercised_and_rows_are_independent(monkeypatch):
    monkeypatch.setattr(gemv_module, "_num_sms", lambda device: 64)   # force several K splits
    assert gemv_module.num_splits(70, 1024, 64) > 1
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(6, 1024, generator=gen, device="cpu").to(DEVICE)
    w = torch.randn(70, 1024, generator=gen).to(DEVICE)
    out = torch.full((6, 70), float("nan"), device=DEVICE)
    out.copy_(gemv_module.gemv(x, w, None))                           # a poisoned buffer is overwritten
    torch.testing.assert_close(out, x @ w.T, rtol=1e-5, atol=1e-4)
    alone = gemv_module.gemv(x[2:3].clone(), w, None)
    assert torch.equal(alone[0], out[2])                               # a row does not depend on the others


def test_not_offered_without_opt_in_or_above_16_rows(monkeypatch):
    x, w = torch.randn(17, 32, device=DEVICE), torch.randn(8, 32, device=DEVICE)
    assert not triton_backend._supports_linear(x, w, None)
    monkeypatch.delenv(triton_backend.GEMV_ENV)
    assert not triton_backend._supports_linear(x[:1], w, None)
    assert triton_backend._supports_linear(x[:1], w, None, batch_invariant=True)
    with pytest.raises(ValueError, match="^x: "):
        gemv_module.gemv(x, w, None)
