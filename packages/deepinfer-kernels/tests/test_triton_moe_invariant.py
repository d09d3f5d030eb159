# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`fused_moe(batch_invariant=True)`: a token's output bits are the same alone and among random
neighbours (reference everywhere; triton under TRITON_INTERPRET=1 on the CPU, natively on CUDA),
and match the default path numerically."""

from __future__ import annotations

import os

import pytest
import torch

from deepinfer_kernels import ops

BACKENDS = ["reference"]
if torch.cuda.is_available() or os.environ.get("TRITON_INTERPRET") == "1":
    BACKENDS.append("triton")


def moe_inputs(tokens: int, seed: int, device: str):
    g = torch.Generator().manual_seed(seed)
    experts, hidden, inter = 8, 32, 16
    h = torch.randn(tokens, hidden, generator=g)
    logits = torch.randn(tokens, experts, generator=g)
    w13 = torch.randn(experts, 2 * inter, hidden, generator=g) / hidden**0.5
    w2 = torch.randn(experts, hidden, inter, generator=g) / inter**0.5
    return [t.to(device) for t in (h, logits, w13, w2)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_token_alone_equals_token_in_any_batch(backend: str) -> None:
    device = "cuda" if torch.cuda.is_available() and backend == "triton" else "cpu"
    h, logits, w13, w2 = moe_inputs(1, seed=0, device=device)
    alone = ops.fused_moe(h, logits, w13, w2, 2, batch_invariant=True, backend=backend)
    for count, seed in ((1, 1), (5, 2), (17, 3)):
        nh, nl, _, _ = moe_inputs(count, seed=seed, device=device)
        pos = count // 2
        bh = torch.cat([nh[:pos], h, nh[pos:]])
        bl = torch.cat([nl[:pos], logits, nl[pos:]])
        out = ops.fused_moe(bh, bl, w13, w2, 2, batch_invariant=True, backend=backend)
        assert torch.equal(out[pos:pos + 1], alone), f"{backend}: differs beside {count} neighbours"
        ref = ops.fused_moe(bh, bl, w13, w2, 2, backend="reference")
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_batch_invariant_flag_is_checked() -> None:
    h, logits, w13, w2 = moe_inputs(2, seed=0, device="cpu")
    with pytest.raises(ValueError, match="batch_invariant"):
        ops.fused_moe(h, logits, w13, w2, 2, batch_invariant="yes")
