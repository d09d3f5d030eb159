# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The triton backend on the CPU, through the triton interpreter (tiny shapes).

TRITON_INTERPRET=1 must be set before triton is first imported: Bazel sets it for
test_triton_*.py targets; under plain pytest tests/conftest.py sets it on machines without
CUDA (on CUDA machines tests/test_backends.py runs triton natively). A process that imported
triton before the variable was set cannot interpret; these tests then skip. bfloat16 is
skipped: the interpreter rounds float32 -> bfloat16 casts toward zero (GPUs round to
nearest even).
"""

from __future__ import annotations

import pytest
import torch

from deepinfer_kernels import ops
from deepinfer_kernels._registry import ENV_VAR, default_registry
from deepinfer_kernels.backends.triton import interpreter_active
from deepinfer_kernels.testing import assert_matches_reference, backend_params, op_cases

INTERPRETING = interpreter_active()
pytestmark = pytest.mark.skipif(not INTERPRETING, reason="needs triton with TRITON_INTERPRET=1 "
                                "set before triton's first import")
PARAMS = backend_params("cpu", tag="interp", backends=("triton",), explicit=True,
                        skip_dtypes=(torch.bfloat16,)) if INTERPRETING else []


@pytest.mark.parametrize("case, dtype, backend", PARAMS)
def test_triton_matches_reference_interpreted(case, dtype, backend):
    assert_matches_reference(case, backend, dtype, "cpu", seed=5)


def test_cpu_selection_never_picks_triton_automatically(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    x = torch.randn(2, 8)
    impl = default_registry().select("rms_norm", x.device, x.dtype, (x, torch.ones(8), 1e-6, None),
                                     {})
    assert impl.backend != "triton"
    monkeypatch.setenv(ENV_VAR, "rms_norm:triton")             # a named preference may
    impl = default_registry().select("rms_norm", x.device, x.dtype, (x, torch.ones(8), 1e-6, None),
                                     {})
    assert impl.backend == "triton"


def test_triton_decode_is_batch_invariant():
    case = next(c for c in op_cases("paged_attention_decode", "interp") if "sinks" in c.name)
    args, _ = case.inputs(torch.float32, "cpu", seed=6)
    q, k_cache, v_cache, table, lens = args[:5]
    full = ops.paged_attention_decode(*args, backend="triton")
    alone = ops.paged_attention_decode(q[1:], k_cache, v_cache, table[1:], lens[1:], *args[5:],
                                       backend="triton")
    wider = torch.cat([table, table[:, :1]], dim=1)            # a wider block table: more splits
    widened = ops.paged_attention_decode(q, k_cache, v_cache, wider, lens, *args[5:],
                                         backend="triton")
    assert torch.equal(full[1:], alone)
    assert torch.equal(full, widened)


@pytest.mark.parametrize("name", ["3of7-1of9-0of4-4of4_Hq2_Hk1_D16_S4", "3of7-2of9_Hq2_Hk2_D16_S4_W3_sinks"])
def test_triton_prefill_real_rows_ignore_the_mixed_graph_padding(name):
    # deepinfer_core's mixed CUDA graphs pad a step of T tokens and B requests to T_size rows
    # owned by one more request (its keys read through a block-table row of zeros) and to B_max
    # request slots with no query and no keys: the real rows must come out bit for bit as unpadded.
    case = next(c for c in op_cases("paged_attention_prefill", "interp") if c.name == name)
    q, k_cache, v_cache, table, cu, lens, *rest = case.inputs(torch.float32, "cpu", seed=7)[0]
    tokens, batch, pad, slots = q.shape[0], lens.shape[0], 6, 3
    width = max(table.shape[1], -(-pad // k_cache.shape[1]))
    padded_table = torch.zeros(batch + 1 + slots, width, dtype=table.dtype)
    padded_table[:batch, :table.shape[1]] = table
    padded_lens = torch.cat([lens, torch.tensor([pad] + [0] * slots, dtype=lens.dtype)])
    padded_cu = torch.cat([cu, torch.full((1 + slots,), tokens + pad, dtype=cu.dtype)])
    padded_q = torch.cat([q, torch.randn(pad, *q.shape[1:])])
    plain = ops.paged_attention_prefill(q, k_cache, v_cache, table, cu, lens, *rest, backend="triton")
    padded = ops.paged_attention_prefill(padded_q, k_cache, v_cache, padded_table, padded_cu, padded_lens, *rest,
                                         backend="triton")
    assert torch.equal(padded[:tokens], plain)
    reference = ops.paged_attention_prefill(q, k_cache, v_cache, table, cu, lens, *rest, backend="reference")
    torch.testing.assert_close(plain, reference, rtol=1e-5, atol=1e-5)
