# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Selection logic of the backend registry, on private registries with fake backends."""

from __future__ import annotations

import logging
import sys
import types

import pytest
import torch

from deepinfer_kernels import ops
from deepinfer_kernels._registry import ENV_VAR, Impl, Registry, default_registry, parse_override
from deepinfer_kernels.testing import OPS

FAKE_MODULE = "fake_kernel_backend_for_tests"


@pytest.fixture
def fake_module(monkeypatch):
    module = types.ModuleType(FAKE_MODULE)
    module.calls = []
    for name in ("ref", "fast", "faster", "picky"):
        setattr(module, name, (lambda n: lambda *a, **k: module.calls.append(n) or n)(name))
    monkeypatch.setitem(sys.modules, FAKE_MODULE, module)
    return module


def _registry(**overrides) -> Registry:
    registry = Registry()
    registry.register(Impl("op", "reference", f"{FAKE_MODULE}:ref", ("*",)))
    registry.register(Impl("op", "fast", f"{FAKE_MODULE}:fast", ("cpu",), priority=10))
    registry.register(Impl("op", "faster", f"{FAKE_MODULE}:faster", ("cuda",), ("cpu",),
                           priority=20))
    registry.register(Impl("op", "picky", f"{FAKE_MODULE}:picky", ("cpu",), priority=30,
                           supports=lambda x: x.shape[-1] % 8 == 0))
    return registry


def _select(registry, x, backend=None):
    return registry.select("op", x.device, x.dtype, (x,), {}, backend).backend


def test_priority_then_supports_then_fallback(fake_module, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    registry = _registry()
    assert _select(registry, torch.zeros(2, 16)) == "picky"       # highest priority, supported
    assert _select(registry, torch.zeros(2, 15)) == "fast"        # picky rejects; explicit-only skipped
    registry.impls["op"] = [i for i in registry.impls["op"] if i.backend in ("reference", "picky")]
    registry._candidates.clear()
    assert _select(registry, torch.zeros(2, 15)) == "reference"   # nobody supports: fallback


def test_explicit_backend_wins_and_errors_are_named(fake_module, monkeypatch):
    monkeypatch.setenv(ENV_VAR, "*:fast")
    registry = _registry()
    assert _select(registry, torch.zeros(2, 16), "faster") == "faster"  # explicit-only device ok
    with pytest.raises(ValueError, match="backend"):
        _select(registry, torch.zeros(2, 15), "picky")
    with pytest.raises(ValueError, match="backend.*nope"):
        _select(registry, torch.zeros(2, 16), "nope")


def test_env_override_prefers_named_backend(fake_module, monkeypatch):
    registry = _registry()
    monkeypatch.setenv(ENV_VAR, "other:picky,op:fast")
    assert _select(registry, torch.zeros(2, 16)) == "fast"
    monkeypatch.setenv(ENV_VAR, "*:reference")
    assert _select(registry, torch.zeros(2, 16)) == "reference"
    monkeypatch.setenv(ENV_VAR, "faster")                  # bare name = *:faster, explicit device
    assert _select(registry, torch.zeros(2, 16)) == "faster"
    monkeypatch.setenv(ENV_VAR, "op:missing")              # unknown: fall through to priority
    assert _select(registry, torch.zeros(2, 16)) == "picky"


def test_unavailable_backend_is_never_selected(fake_module, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    registry = Registry()
    registry.register(Impl("op", "reference", f"{FAKE_MODULE}:ref", ("*",)))
    registry.register(Impl("op", "fast", f"{FAKE_MODULE}:fast", ("cpu",), priority=5,
                           available=lambda device: False))
    assert _select(registry, torch.zeros(1)) == "reference"
    with pytest.raises(ValueError, match="not available"):
        _select(registry, torch.zeros(1), "fast")


def test_candidates_are_cached_per_key_and_loading_is_lazy(fake_module, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    probes = []
    registry = Registry()
    registry.register(Impl("op", "reference", f"{FAKE_MODULE}:ref", ("*",)))
    registry.register(Impl("op", "fast", f"{FAKE_MODULE}:fast", ("cpu",), priority=5,
                           available=lambda device: probes.append(1) or True))
    for _ in range(3):
        _select(registry, torch.zeros(1))
    _select(registry, torch.zeros(1, dtype=torch.float64))
    assert len(probes) == 1                                  # once per (op, backend, device)
    impl = registry.get("op", "fast")
    assert registry.load(impl)() == "fast" and fake_module.calls == ["fast"]


def test_duplicate_registration_is_rejected():
    registry = Registry()
    registry.register(Impl("op", "reference", "x:y", ("*",)))
    with pytest.raises(ValueError, match="already registered"):
        registry.register(Impl("op", "reference", "x:z", ("*",)))


def test_parse_override():
    assert parse_override("rms_norm:reference, *:triton") == {"rms_norm": "reference",
                                                              "*": "triton"}
    assert parse_override("") == {}
    assert parse_override("cuda") == {"*": "cuda"}
    with pytest.raises(ValueError, match=ENV_VAR):
        parse_override("rms_norm:")
    for malformed in ("rms_norm=triton", "a:b:c", "rms_norm:reference;*:triton", "tri ton"):
        with pytest.raises(ValueError, match=ENV_VAR):
            parse_override(malformed)


def test_default_registry_has_reference_for_every_op():
    registry = default_registry()
    for op in OPS:
        assert "reference" in registry.backends(op)
        assert hasattr(ops, op)


def test_public_op_falls_back_to_reference_and_logs_once(monkeypatch, caplog):
    monkeypatch.setenv(ENV_VAR, "*:no_such_backend")
    x, w = torch.randn(2, 8), torch.randn(8)
    with caplog.at_level(logging.INFO, logger="deepinfer_kernels"):
        out = ops.rms_norm(x, w, 1e-6)
    expected = ops.rms_norm(x, w, 1e-6, backend="reference")
    assert torch.equal(out, expected)
    assert "no_such_backend" in caplog.text
