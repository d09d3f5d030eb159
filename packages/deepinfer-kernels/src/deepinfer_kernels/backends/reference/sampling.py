# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Reference sampler (see `deepinfer_kernels.ops.sample`) and its counter-based hash.

The random number of row b, vocabulary entry v is a pure function of
`(seeds[b], steps[b], v)`, computed with int64 tensor ops whose values never exceed 2**49,
so every device produces the same bits (no overflow, no device RNG):

    mul32(a, c)  = (a * c_lo + (((a * c_hi) & 0xFFFF) << 16)) & 0xFFFFFFFF
                   # low 32 bits of a * c for a < 2**32, c = c_hi * 2**16 + c_lo
    fmix32(h)    : h ^= h >> 16; h = mul32(h, 0x85EBCA6B); h ^= h >> 13;
                   h = mul32(h, 0xC2B2AE35); h ^= h >> 16
                   # the MurmurHash3 32-bit finaliser (Appleby, public domain)
    row key      : k = fmix32(seed_lo ^ 0x9E3779B9);  k = fmix32(k ^ seed_hi ^ 0x7F4A7C15)
                   k = fmix32(k ^ step_lo ^ 0x6A09E667); k = fmix32(k ^ step_hi ^ 0xBB67AE85)
                   # *_lo / *_hi: the low / high 32 bits of the int64
    bits(v)      = fmix32(k ^ mul32(v + 1, 0x9E3779B1))
    u(v)         = ((bits(v) >> 9) + 0.5) / 2**23         # float32, exactly in (0, 1)

The draw is the exponential race `argmax_v p_v / (-ln u_v)`, which picks v with
probability p_v / sum(p) (a minimum of independent exponentials).
"""

from __future__ import annotations

import torch

MASK32 = 0xFFFFFFFF


def mul32(a: torch.Tensor, c: int) -> torch.Tensor:
    """Low 32 bits of `a * c` for int64 `a` in [0, 2**32) and a 32-bit constant `c`."""
    c_hi, c_lo = c >> 16, c & 0xFFFF
    return (a * c_lo + (((a * c_hi) & 0xFFFF) << 16)) & MASK32


def fmix32(h: torch.Tensor) -> torch.Tensor:
    """MurmurHash3's 32-bit finaliser on int64 tensors holding values in [0, 2**32)."""
    h = h ^ (h >> 16)
    h = mul32(h, 0x85EBCA6B)
    h = h ^ (h >> 13)
    h = mul32(h, 0xC2B2AE35)
    return h ^ (h >> 16)


def row_keys(seeds: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
    """[B] int64 per-row keys in [0, 2**32) from int64 seeds and steps."""
    k = fmix32((seeds & MASK32) ^ 0x9E3779B9)
    k = fmix32(k ^ ((seeds >> 32) & MASK32) ^ 0x7F4A7C15)
    k = fmix32(k ^ (steps & MASK32) ^ 0x6A09E667)
    return fmix32(k ^ ((steps >> 32) & MASK32) ^ 0xBB67AE85)


def uniforms(seeds: torch.Tensor, steps: torch.Tensor, vocab: int) -> torch.Tensor:
    """[B, vocab] float32 uniforms in (0, 1), a pure function of (seed, step, index)."""
    index = torch.arange(1, vocab + 1, dtype=torch.int64, device=seeds.device)
    bits = fmix32(row_keys(seeds, steps).unsqueeze(1) ^ mul32(index, 0x9E3779B1).unsqueeze(0))
    return ((bits >> 9).to(torch.float32) + 0.5) * (2.0 ** -23)


def filtered_probs(logits: torch.Tensor, temperature: torch.Tensor, top_k: torch.Tensor,
                   top_p: torch.Tensor, min_p: torch.Tensor) -> torch.Tensor:
    """[B, V] float32 probabilities after temperature, top-k, top-p, min-p; rows sum to 1."""
    vocab = logits.shape[1]
    safe_t = torch.where(temperature > 0, temperature, torch.ones_like(temperature))
    probs = torch.softmax(logits / safe_t.unsqueeze(1), dim=-1)
    p, order = probs.sort(dim=-1, descending=True, stable=True)
    # top-k: keep values >= the k-th largest (ties kept).
    k_on = (top_k > 0) & (top_k < vocab)
    kth = p.gather(1, (top_k.clamp(1, max(vocab, 1)) - 1).unsqueeze(1))
    p = torch.where(k_on.unsqueeze(1) & (p < kth), torch.zeros_like(p), p)
    p = p / p.sum(dim=-1, keepdim=True)
    # top-p: keep the prefix whose mass before each token is < top_p.
    before = p.cumsum(dim=-1) - p
    p_on = (top_p < 1).unsqueeze(1)
    p = torch.where(p_on & (before >= top_p.unsqueeze(1)), torch.zeros_like(p), p)
    p = p / p.sum(dim=-1, keepdim=True)
    # min-p: drop tokens below min_p times the most probable (p[:, 0] after the sort).
    p = torch.where(p < min_p.unsqueeze(1) * p[:, :1], torch.zeros_like(p), p)
    p = p / p.sum(dim=-1, keepdim=True)
    return torch.zeros_like(p).scatter_(1, order, p)


def sample(logits: torch.Tensor, temperature: torch.Tensor, top_k: torch.Tensor,
           top_p: torch.Tensor, min_p: torch.Tensor, seeds: torch.Tensor,
           steps: torch.Tensor) -> torch.Tensor:
    if logits.shape[0] == 0:
        return torch.empty(0, dtype=torch.int64, device=logits.device)
    greedy = logits.argmax(dim=-1)
    probs = filtered_probs(logits, temperature, top_k, top_p, min_p)
    race = probs / -torch.log(uniforms(seeds, steps, logits.shape[1]))
    drawn = race.argmax(dim=-1)
    return torch.where(temperature == 0, greedy, drawn)
