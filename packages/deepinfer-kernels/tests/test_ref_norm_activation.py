# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Reference rms_norm and silu_and_mul against HF transformers and closed forms."""

from __future__ import annotations

import pytest
import torch
from transformers.activations import ACT2FN
from transformers.models.llama.modeling_llama import LlamaRMSNorm

from deepinfer_kernels import ops


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 8), (7, 96), (33, 1000)])
def test_rms_norm_matches_hf_llama(shape, dtype):
    torch.manual_seed(0)
    x = torch.randn(shape).to(dtype)
    norm = LlamaRMSNorm(shape[1], eps=1e-5)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(shape[1]) * 0.3 + 1)
    norm = norm.to(dtype)
    expected = norm(x)
    out = ops.rms_norm(x, norm.weight.detach(), 1e-5, backend="reference")
    assert out.dtype == dtype
    # HF rounds twice in 16-bit dtypes (normalised x, then the product): one ulp apart.
    tol = 0 if dtype == torch.float32 else 2 ** -7
    torch.testing.assert_close(out, expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rms_norm_residual_is_hf_add_then_norm(dtype):
    torch.manual_seed(1)
    x, residual = torch.randn(5, 64).to(dtype), torch.randn(5, 64).to(dtype)
    norm = LlamaRMSNorm(64, eps=1e-6).to(dtype)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(64))
    x_before, res_before = x.clone(), residual.clone()
    out, new_residual = ops.rms_norm(x, norm.weight.detach(), 1e-6, residual)
    hf_sum = residual + x                      # HF decoder layer: residual + hidden_states
    torch.testing.assert_close(new_residual, hf_sum, rtol=0, atol=0)
    tol = 0 if dtype == torch.float32 else 2 ** -7
    torch.testing.assert_close(out, norm(hf_sum), rtol=tol, atol=tol)
    assert torch.equal(x, x_before) and torch.equal(residual, res_before)   # functional


def test_rms_norm_float64_closed_form():
    torch.manual_seed(2)
    x, w = torch.randn(4, 50), torch.randn(50)
    x64 = x.double()
    expected = w.double() * x64 / torch.sqrt((x64 ** 2).mean(-1, keepdim=True) + 1e-6)
    torch.testing.assert_close(ops.rms_norm(x, w, 1e-6).double(), expected, rtol=1e-5, atol=1e-6)


def test_rms_norm_empty_batch():
    out = ops.rms_norm(torch.empty(0, 16), torch.ones(16), 1e-6)
    assert out.shape == (0, 16)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_silu_and_mul_matches_closed_form(dtype):
    torch.manual_seed(3)
    x = (torch.randn(9, 2 * 37) * 3).to(dtype)
    gate, up = x.double().chunk(2, dim=-1)
    expected = gate / (1 + torch.exp(-gate)) * up
    out = ops.silu_and_mul(x)
    assert out.shape == (9, 37) and out.dtype == dtype
    tol = 1e-6 if dtype == torch.float32 else 8e-3
    torch.testing.assert_close(out.double(), expected, rtol=tol, atol=tol)
    hf = ACT2FN["silu"](x.float()[:, :37]) * x.float()[:, 37:]
    torch.testing.assert_close(out.float(), hf, rtol=tol, atol=tol)


def test_silu_and_mul_empty_batch():
    assert ops.silu_and_mul(torch.empty(0, 8)).shape == (0, 4)
