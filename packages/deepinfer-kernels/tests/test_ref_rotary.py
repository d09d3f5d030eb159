# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""build_rope_cache against transformers' RoPE init functions; rotary_embedding against a
direct complex-number formula and HF's apply_rotary_pos_emb."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from deepinfer_kernels import ops

HEAD = 64
BASE = 500000.0
MAX_POS = 4096

SCALINGS = {
    "linear": {"rope_type": "linear", "factor": 4.0},
    "llama3": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 512},
    "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024},
    "yarn_mscale": {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 256,
                    "mscale": 1.0, "mscale_all_dim": 0.707, "beta_fast": 24, "beta_slow": 2},
}


def _hf_inv_freq(scaling: dict) -> tuple[torch.Tensor, float]:
    config = LlamaConfig(hidden_size=HEAD * 4, num_attention_heads=4, head_dim=HEAD,
                         max_position_embeddings=MAX_POS,
                         rope_parameters={"rope_theta": BASE, **scaling})
    return ROPE_INIT_FUNCTIONS[scaling["rope_type"]](config, "cpu")


@pytest.mark.parametrize("name", sorted(SCALINGS))
def test_rope_cache_matches_transformers(name):
    scaling = SCALINGS[name]
    inv_freq, attention_factor = _hf_inv_freq(scaling)
    positions = torch.arange(MAX_POS, dtype=torch.float32)
    angles = torch.outer(positions, inv_freq.float())
    expected = torch.cat([angles.cos(), angles.sin()], dim=-1) * attention_factor
    got = ops.build_rope_cache(HEAD, MAX_POS, BASE, scaling, torch.float32, "cpu")
    assert got.shape == (MAX_POS, HEAD)
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)
    if name == "linear":                                       # the scaling does something
        plain = ops.build_rope_cache(HEAD, MAX_POS, BASE, None)
        assert not torch.allclose(got, plain)


def test_rope_cache_default_closed_form():
    rot, base = 32, 10000.0
    got = ops.build_rope_cache(rot, 300, base, None, torch.float64)
    i = torch.arange(rot // 2, dtype=torch.float64)
    angles = torch.arange(300, dtype=torch.float64)[:, None] * base ** (-2 * i / rot)
    expected = torch.cat([angles.cos(), angles.sin()], dim=-1)
    torch.testing.assert_close(got, expected, rtol=0, atol=2e-4)   # float32 angles


@pytest.mark.parametrize("bad, field", [({"rope_type": "nope"}, "rope_type"),
                                        ({"rope_type": "linear"}, "factor"),
                                        ({"rope_type": "llama3", "factor": 8.0}, "low_freq_factor")])
def test_rope_cache_bad_scaling_names_field(bad, field):
    with pytest.raises(ValueError, match=field):
        ops.build_rope_cache(16, 8, 10000.0, bad)


def _complex_rotate(x: torch.Tensor, pos: torch.Tensor, inv_freq: torch.Tensor, neox: bool,
                    rot: int) -> torch.Tensor:
    """x [T, H, D] float64; rotate pairs as complex numbers times e^{i p theta}."""
    half = rot // 2
    if neox:
        z = torch.complex(x[..., :half], x[..., half:rot])
    else:
        z = torch.complex(x[..., 0:rot:2], x[..., 1:rot:2])
    phase = torch.polar(torch.ones(len(pos), half, dtype=torch.float64),
                        pos[:, None].double() * inv_freq[None].double())
    z = z * phase[:, None, :]
    if neox:
        rotated = torch.cat([z.real, z.imag], dim=-1)
    else:
        rotated = torch.stack([z.real, z.imag], dim=-1).flatten(-2)
    return torch.cat([rotated, x[..., rot:]], dim=-1)


@pytest.mark.parametrize("neox", [True, False])
@pytest.mark.parametrize("head, rot", [(64, 64), (80, 32), (16, 16)])
def test_rotary_matches_complex_formula(neox, head, rot):
    torch.manual_seed(4)
    tokens, max_pos, base = 11, 50, 10000.0
    pos = torch.randint(0, max_pos, (tokens,))
    q, k = torch.randn(tokens, 4, head), torch.randn(tokens, 2, head)
    q0, k0 = q.clone(), k.clone()
    cos_sin = ops.build_rope_cache(rot, max_pos, base, None, torch.float32)
    q_out, k_out = ops.rotary_embedding(pos, q, k, cos_sin, neox)
    inv_freq = 1.0 / base ** (torch.arange(0, rot, 2, dtype=torch.float64) / rot)
    torch.testing.assert_close(q_out.double(), _complex_rotate(q.double(), pos, inv_freq, neox, rot),
                               rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(k_out.double(), _complex_rotate(k.double(), pos, inv_freq, neox, rot),
                               rtol=1e-5, atol=1e-5)
    assert torch.equal(q, q0) and torch.equal(k, k0)                      # functional


def test_rotary_neox_matches_hf_apply_rotary_pos_emb():
    torch.manual_seed(5)
    tokens, head = 7, 32
    pos = torch.randint(0, 40, (tokens,))
    q, k = torch.randn(tokens, 4, head), torch.randn(tokens, 2, head)
    cos_sin = ops.build_rope_cache(head, 40, 10000.0, None)
    cos, sin = cos_sin[pos].chunk(2, dim=-1)
    cos, sin = torch.cat([cos, cos], -1)[None], torch.cat([sin, sin], -1)[None]   # [1, T, D]
    hf_q, hf_k = apply_rotary_pos_emb(q.transpose(0, 1)[None], k.transpose(0, 1)[None], cos, sin)
    q_out, k_out = ops.rotary_embedding(pos, q, k, cos_sin, True)
    torch.testing.assert_close(q_out, hf_q[0].transpose(0, 1), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(k_out, hf_k[0].transpose(0, 1), rtol=1e-6, atol=1e-6)


def test_rotary_empty_batch():
    cos_sin = ops.build_rope_cache(16, 8, 10000.0, None)
    q_out, k_out = ops.rotary_embedding(torch.empty(0, dtype=torch.int64), torch.empty(0, 2, 16),
                                        torch.empty(0, 1, 16), cos_sin, True)
    assert q_out.shape == (0, 2, 16) and k_out.shape == (0, 1, 16)
