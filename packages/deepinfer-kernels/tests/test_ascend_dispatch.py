# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Ascend dispatch logic with a fake `torch_npu` module (no NPU here): registration only when
torch_npu imports, "npu" tensors route to the ascend implementations, their dtypes and
supports() are honoured, everything else falls back to reference. Numerics are checked only
on NPU runners."""

from __future__ import annotations

import sys
import types

import pytest
import torch

from deepinfer_kernels import ops
from deepinfer_kernels.backends import build_registry

NPU = types.SimpleNamespace(type="npu")     # a stand-in device: selection reads .type only


@pytest.fixture
def fake_torch_npu(monkeypatch):
    calls = []

    def npu_rms_norm(x, gamma, epsilon):
        calls.append("npu_rms_norm")
        return ops.rms_norm(x, gamma, epsilon, backend="reference"), None

    def npu_swiglu(x, dim):
        calls.append("npu_swiglu")
        return ops.silu_and_mul(x, backend="reference")

    module = types.ModuleType("torch_npu")
    module.npu_rms_norm = npu_rms_norm
    module.npu_swiglu = npu_swiglu
    module.npu = types.SimpleNamespace(is_available=lambda: True)
    monkeypatch.setitem(sys.modules, "torch_npu", module)
    monkeypatch.delitem(sys.modules, "deepinfer_kernels.backends.ascend.ops", raising=False)
    return calls


def _select(registry, op, device, args):
    return registry.select(op, device, args[0].dtype, args, {})


def test_nothing_registers_without_torch_npu(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch_npu", None)        # import torch_npu -> ImportError
    registry = build_registry(load_plugins=False)
    assert all("ascend" not in registry.backends(op) for op in registry.impls)
    x = torch.randn(2, 8)
    assert _select(registry, "rms_norm", NPU, (x, torch.ones(8), 1e-6, None)).backend == "reference"


def test_npu_tensors_route_to_ascend(fake_torch_npu):
    registry = build_registry(load_plugins=False)
    assert registry.backends("rms_norm")[-1] == "ascend"
    x, w = torch.randn(3, 16), torch.randn(16)
    impl = _select(registry, "rms_norm", NPU, (x, w, 1e-6, None))
    assert impl.backend == "ascend"
    out = registry.load(impl)(x, w, 1e-6, None)
    assert fake_torch_npu == ["npu_rms_norm"]
    assert torch.equal(out, ops.rms_norm(x, w, 1e-6, backend="reference"))
    gate_up = torch.randn(4, 10)
    impl = _select(registry, "silu_and_mul", NPU, (gate_up,))
    assert torch.equal(registry.load(impl)(gate_up), ops.silu_and_mul(gate_up))
    assert fake_torch_npu[-1] == "npu_swiglu"


def test_supports_and_fallback_are_honoured(fake_torch_npu):
    registry = build_registry(load_plugins=False)
    strided = torch.randn(16, 3).t()                          # not contiguous: unsupported
    assert _select(registry, "rms_norm", NPU, (strided, torch.ones(16), 1e-6, None)).backend \
        == "reference"
    q = torch.randn(2, 2, 16)                                 # no ascend attention: reference
    args = (q, torch.randn(2, 4, 1, 16), torch.randn(2, 4, 1, 16),
            torch.zeros(2, 1, dtype=torch.int32), torch.ones(2, dtype=torch.int32), 0.25, None,
            None, 16)
    assert _select(registry, "paged_attention_decode", NPU, args).backend == "reference"
    x = torch.randn(2, 8)                                     # CPU tensors never go to ascend
    cpu = _select(registry, "rms_norm", torch.device("cpu"), (x, torch.ones(8), 1e-6, None))
    assert cpu.backend != "ascend"


def test_explicit_ascend_on_cpu_is_rejected(fake_torch_npu):
    registry = build_registry(load_plugins=False)
    x = torch.randn(2, 8)
    with pytest.raises(ValueError, match="backend"):
        registry.select("rms_norm", x.device, x.dtype, (x, torch.ones(8), 1e-6, None), {},
                        backend="ascend")
