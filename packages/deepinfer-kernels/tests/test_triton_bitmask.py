# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Every launch configuration of the triton bitmask kernel (backends/triton/bitmask.py: words
per program, load/store or store-only writes) against the reference on fresh random inputs,
through the interpreter on the CPU (natively on a GPU): bitwise equal, with a vocabulary that
ends mid-word, a row subset, and rows left alone outside it."""

from __future__ import annotations

import pytest
import torch

from deepinfer_kernels.backends import triton as triton_backend
from deepinfer_kernels.backends.reference import bitmask as reference
from deepinfer_kernels.backends.triton import bitmask

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
pytestmark = pytest.mark.skipif(DEVICE == "cpu" and not triton_backend.interpreter_active(),
                                reason="needs a GPU or TRITON_INTERPRET=1 set before triton's first import")


@pytest.mark.parametrize("config", [bitmask.BitmaskConfig(16, 2, False), bitmask.BitmaskConfig(16, 4, True),
                                    bitmask.BitmaskConfig(32, 4, False), bitmask.BitmaskConfig(64, 8, True),
                                    bitmask.DEFAULT],
                         ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("indexed", [False, True])
def test_every_config_matches_reference_bitwise(config, dtype, indexed):
    gen = torch.Generator().manual_seed(config.words * 7 + config.num_warps)
    rows, vocab = 5, 2 * 32 * config.words + 37          # three programs a row, the last one partial
    words = -(-vocab // 32) + 1                          # a spare word past the vocabulary
    logits = torch.randn(rows, vocab, generator=gen).to(DEVICE, dtype)
    mask = torch.randint(-2**31, 2**31, (rows, words), generator=gen, dtype=torch.int32).to(DEVICE)
    indices = torch.tensor([3, 0, 4], device=DEVICE) if indexed else None
    want, got = logits.clone(), logits.clone()
    reference.apply_token_bitmask(want, mask, indices)
    bitmask.apply_token_bitmask(got, mask, indices, config)
    assert torch.equal(got, want)
    assert not torch.equal(got, logits)                  # something was masked
    if indexed:                                          # rows outside the subset untouched
        assert torch.equal(got[[1, 2]], logits[[1, 2]])


@pytest.mark.parametrize("kwargs", [dict(words=0), dict(words=3), dict(words=-4), dict(num_warps=6),
                                    dict(words=True), dict(store_only=1)])
def test_bad_configs_are_refused_by_name(kwargs):
    with pytest.raises(ValueError, match=f"^{next(iter(kwargs))}:"):
        bitmask.BitmaskConfig(**kwargs)
