# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`deepinfer_kernels.selected_backend` reports the backend the op call itself runs."""

from __future__ import annotations

import pytest
import torch

import deepinfer_kernels
from deepinfer_kernels import _registry, ops


def _spy_backend(monkeypatch) -> list[str]:
    """Records the backend each dispatched call ran (wraps the registry's selection)."""
    ran: list[str] = []
    original = _registry.Registry.select

    def select(self, *a, **kw):
        impl = original(self, *a, **kw)
        ran.append(impl.backend)
        return impl

    monkeypatch.setattr(_registry.Registry, "select", select)
    return ran


@pytest.mark.parametrize("explicit", [None, "reference"])
def test_matches_the_backend_the_call_runs(monkeypatch, explicit):
    monkeypatch.delenv(_registry.ENV_VAR, raising=False)
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 70, generator=gen)
    bitmask = torch.randint(-2**31, 2**31 - 1, (3, 3), generator=gen, dtype=torch.int64).to(torch.int32)
    x, w = torch.randn(5, 64, generator=gen), torch.randn(64, generator=gen)
    for op, args in (("apply_token_bitmask", (logits.clone(), bitmask, None)), ("rms_norm", (x, w, 1e-6, None))):
        predicted = deepinfer_kernels.selected_backend(op, *args, backend=explicit)
        ran = _spy_backend(monkeypatch)
        getattr(ops, op)(*args, backend=explicit)
        monkeypatch.undo()
        monkeypatch.delenv(_registry.ENV_VAR, raising=False)
        assert ran == [predicted], op
        if explicit is not None:
            assert predicted == explicit


def test_bad_requests_name_the_field():
    with pytest.raises(ValueError, match="op: unknown op"):
        deepinfer_kernels.selected_backend("no_such_op", torch.zeros(1))
    with pytest.raises(ValueError, match="args: the first argument"):
        deepinfer_kernels.selected_backend("rms_norm", [1.0], torch.ones(1), 1e-6, None)
    with pytest.raises(ValueError, match="backend:"):
        deepinfer_kernels.selected_backend("rms_norm", torch.zeros(2, 4), torch.ones(4), 1e-6, None, backend="nope")
