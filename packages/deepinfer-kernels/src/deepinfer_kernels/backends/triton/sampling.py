# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Triton sampler (see `deepinfer_kernels.ops.sample`): the reference's math, sort-free.

One program per row streams the row in chunks, several times:
  1. greedy rows (temperature 0): one pass, the first index of the largest logit;
  2. otherwise `x = logits / T` (correctly rounded division, as torch), the row max `m`,
     `Z = sum exp(x - m)`, then `p_v = exp(x_v - m) / Z` written once to a float32 scratch
     row that the later passes read;
  3. top-k: the k-th largest p is found without sorting, by a radix search over the bit
     patterns of p (non-negative floats order like their bits): 8 passes, each counting the
     tokens at or above 16 candidate thresholds, fix 4 more bits of the answer. Ties kept.
  4. top-p: the same search, weighting tokens by p, finds the smallest kept value tau: the
     tokens above tau have mass M < top_p * S (S the mass after top-k) and those at or above it
     reach it. Of the n tokens equal to tau, the first ceil((top_p * S - M) / tau) (at least 1)
     in index order are kept, the reference's cumulative rule `M + j * tau < top_p * S` (its
     stable sort orders ties by index); a pass that ranks the ties runs only when some are cut;
  5. min-p: drop `p < min_p * max(p)` (`max(p) = 1 / Z`);
  6. the exponential race over the kept tokens, `argmax_v p_v / (-ln u_v)`, with the
     reference's counter-based hash for `u` (same bits), ties to the lowest index.
Scaling p by the renormalisations of the reference changes no comparison, so it is skipped.
Every pass accumulates lane-wise and reduces across lanes once at its end.

Identity with `reference`: the hash bits and the candidate sets are the same; p itself may
differ in the last bits (tl.exp is not torch's exp, and sums are taken in another order), so
a row can differ only when two of the compared quantities are within a few float32 ulps: two
race values, a top-p cumulative mass and top_p * S, or two probabilities that round together
in one implementation but not the other (x itself is bit-identical, and both exps are monotone,
so the ranking of distinct tokens never changes).

Cost: greedy 1 pass over the row; plain sampling 4; with top-k and top-p 22. Rows are
independent programs, so a row's result never depends on the batch. One program per row
leaves most of the GPU idle at small B: splitting rows across programs is the next step.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _fmix32(h):
    """MurmurHash3's 32-bit finaliser on uint32 (wrapping multiplies)."""
    h ^= h >> 16
    h *= tl.full([], 0x85EBCA6B, tl.uint32)
    h ^= h >> 13
    h *= tl.full([], 0xC2B2AE35, tl.uint32)
    return h ^ (h >> 16)


@triton.jit
def _row_key(seed, step):
    """The reference's per-row key from int64 seed and step (`row_keys`)."""
    k = _fmix32((seed & 0xFFFFFFFF).to(tl.uint32) ^ tl.full([], 0x9E3779B9, tl.uint32))
    k = _fmix32(k ^ ((seed >> 32) & 0xFFFFFFFF).to(tl.uint32) ^ tl.full([], 0x7F4A7C15, tl.uint32))
    k = _fmix32(k ^ (step & 0xFFFFFFFF).to(tl.uint32) ^ tl.full([], 0x6A09E667, tl.uint32))
    return _fmix32(k ^ ((step >> 32) & 0xFFFFFFFF).to(tl.uint32)
                   ^ tl.full([], 0xBB67AE85, tl.uint32))


@triton.jit
def _uniform(key, index):
    """u(v) in (0, 1) for int64 vocabulary indices: `((bits >> 9) + 0.5) / 2**23`."""
    salt = (index + 1).to(tl.uint32) * tl.full([], 0x9E3779B1, tl.uint32)
    bits = _fmix32(key ^ salt)
    return ((bits >> 9).to(tl.float32) + 0.5) * (1.0 / 8388608.0)


@triton.jit
def _probs(row_ptr, offs, mask, temp, row_max, z):
    """p = exp(logits / T - m) / Z over one chunk; 0 where masked."""
    x = tl.math.div_rn(tl.load(row_ptr + offs, mask=mask, other=float("-inf")), temp)
    return tl.where(mask, tl.exp(x - row_max) / z, 0.0)


@triton.jit
def _search(p_ptr, vocab, target, BY_MASS: tl.constexpr, BLOCK: tl.constexpr):
    """Largest bit pattern t with F(t) = sum of w_v over p_v's bits >= t reaching `target`
    (w = p if BY_MASS else 1), 4 bits per pass; returns (t, F(t + 1)). t = 0 when even F(0)
    falls short."""
    digit = tl.arange(0, 16).to(tl.int64)
    prefix = tl.zeros([], tl.int64)
    f_above = tl.zeros([], tl.float32)               # F at the exclusive top of the range
    for level in tl.static_range(8):
        # Candidates past the largest possible bits (those of 1.0) count nothing: clamping
        # them to int32's maximum keeps that and lets the tile compare in int32.
        cand = tl.minimum(prefix + (digit << (28 - 4 * level)), 0x7FFFFFFF).to(tl.int32)
        acc = tl.zeros([BLOCK, 16], tl.float32)
        for start in range(0, vocab, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < vocab
            p = tl.load(p_ptr + offs, mask=mask, other=0.0)
            bits = tl.where(mask, p.to(tl.int32, bitcast=True), -1)
            w = p if BY_MASS else tl.where(mask, 1.0, 0.0)
            acc += tl.where(bits[:, None] >= cand[None, :], w[:, None], 0.0)
        f = tl.sum(acc, axis=0)
        best = tl.max(tl.where(f >= target, digit, 0), axis=0)
        f_above = tl.where(best == 15, f_above, tl.sum(tl.where(digit == best + 1, f, 0.0),
                                                        axis=0))
        prefix += best << (28 - 4 * level)
    return prefix.to(tl.int32), f_above


@triton.jit
def _row_stats(row_ptr, vocab, temp, BLOCK: tl.constexpr):
    """(m, Z): the row max of x = logits / T and sum exp(x - m)."""
    lane_max = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, vocab, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.math.div_rn(tl.load(row_ptr + offs, mask=offs < vocab, other=float("-inf")),
                           temp)
        lane_max = tl.maximum(lane_max, x)
    row_max = tl.max(lane_max, axis=0)
    lane_sum = tl.zeros([BLOCK], tl.float32)
    for start in range(0, vocab, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.math.div_rn(tl.load(row_ptr + offs, mask=offs < vocab, other=float("-inf")),
                           temp)
        lane_sum += tl.exp(x - row_max)
    return row_max, tl.sum(lane_sum, axis=0)


@triton.jit
def _tally(p_ptr, vocab, tau, BLOCK: tl.constexpr):
    """(total p of the tokens whose p bits are >= tau, number of tokens whose bits == tau)."""
    mass = tl.zeros([BLOCK], tl.float32)
    ties = tl.zeros([BLOCK], tl.int32)
    for start in range(0, vocab, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < vocab
        p = tl.load(p_ptr + offs, mask=mask, other=0.0)
        bits = p.to(tl.int32, bitcast=True)
        mass += tl.where(bits >= tau, p, 0.0)
        ties += (mask & (bits == tau)).to(tl.int32)
    return tl.sum(mass, axis=0), tl.sum(ties, axis=0)


@triton.jit
def _nth_tie(p_ptr, vocab, tau, n, BLOCK: tl.constexpr):
    """Index of the n-th (0-based) token, in index order, whose p bits equal tau."""
    seen = tl.zeros([], tl.int32)
    found = tl.full([], vocab, tl.int32)
    for start in range(0, vocab, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < vocab
        p = tl.load(p_ptr + offs, mask=mask, other=0.0)
        tie = (mask & (p.to(tl.int32, bitcast=True) == tau)).to(tl.int32)
        rank = seen + tl.cumsum(tie, axis=0) - tie
        found = tl.minimum(found, tl.min(tl.where((tie == 1) & (rank == n), offs, vocab),
                                         axis=0))
        seen += tl.sum(tie, axis=0)
    return found


@triton.jit
def _first_max(lane_val, lane_idx, vocab):
    """Lowest index among the lanes holding the maximum (lanes keep their first maximum)."""
    best = tl.max(lane_val, axis=0)
    return tl.min(tl.where(lane_val == best, lane_idx, vocab), axis=0).to(tl.int64)


@triton.jit
def _greedy(row_ptr, vocab, BLOCK: tl.constexpr):
    """First index of the largest logit."""
    lane_val = tl.full([BLOCK], float("-inf"), tl.float32)
    lane_idx = tl.arange(0, BLOCK)
    for start in range(0, vocab, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(row_ptr + offs, mask=offs < vocab, other=float("-inf"))
        take = x > lane_val
        lane_idx = tl.where(take, offs, lane_idx)
        lane_val = tl.where(take, x, lane_val)
    return _first_max(lane_val, lane_idx, vocab)


@triton.jit
def _sample_kernel(logits_ptr, temp_ptr, top_k_ptr, top_p_ptr, min_p_ptr, seeds_ptr,
                   steps_ptr, out_ptr, probs_ptr, vocab, logits_stride, BLOCK: tl.constexpr,
                   SEARCH_BLOCK: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    row_ptr = logits_ptr + b * logits_stride
    p_ptr = probs_ptr + b * vocab
    temp = tl.load(temp_ptr + b)
    if temp == 0:
        tl.store(out_ptr + b, _greedy(row_ptr, vocab, BLOCK))
        return
    row_max, z = _row_stats(row_ptr, vocab, temp, BLOCK)
    for start in range(0, vocab, BLOCK):             # p once; later passes read it back
        offs = start + tl.arange(0, BLOCK)
        mask = offs < vocab
        tl.store(p_ptr + offs, _probs(row_ptr, offs, mask, temp, row_max, z), mask=mask)
    tl.debug_barrier()                               # other threads read these values back
    top_k = tl.load(top_k_ptr + b)
    top_p = tl.load(top_p_ptr + b)
    # Top-k: keep bits >= tau_k, the k-th largest p.
    tau_k = tl.zeros([], tl.int32)
    if (top_k > 0) & (top_k < vocab):
        tau_k, _ = _search(p_ptr, vocab, top_k.to(tl.float32), False, SEARCH_BLOCK)
    # Top-p: keep bits > tau_p, and of the tokens at tau_p the first n_keep by index, n_keep
    # the count of j >= 0 with mass_gt + j * p(tau_p) < target (the reference's cumsum rule).
    tau_p = tl.zeros([], tl.int32)
    cut = vocab                                      # tokens at tau_p kept below this index
    if top_p < 1:
        mass_k, _ = _tally(p_ptr, vocab, tau_k, BLOCK)
        target = top_p * mass_k
        tau_p, mass_gt = _search(p_ptr, vocab, target, True, SEARCH_BLOCK)
        _, ties = _tally(p_ptr, vocab, tau_p, BLOCK)
        step = tau_p.to(tl.float32, bitcast=True)
        n_keep = tl.maximum(tl.ceil((target - mass_gt) / step), 1.0)
        if n_keep < ties:
            cut = _nth_tie(p_ptr, vocab, tau_p, n_keep.to(tl.int32), BLOCK)
    floor = tl.load(min_p_ptr + b) * (1.0 / z)
    key = _row_key(tl.load(seeds_ptr + b), tl.load(steps_ptr + b))
    lane_val = tl.full([BLOCK], -1.0, tl.float32)
    lane_idx = tl.arange(0, BLOCK)
    for start in range(0, vocab, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < vocab
        p = tl.load(p_ptr + offs, mask=mask, other=0.0)
        bits = p.to(tl.int32, bitcast=True)
        keep = (mask & (bits >= tau_k) & (p >= floor)
                & ((bits > tau_p) | ((bits == tau_p) & (offs < cut))))
        race = tl.where(keep, p / -tl.log(_uniform(key, offs.to(tl.int64))), 0.0)
        race = tl.where(mask, race, -1.0)
        take = race > lane_val
        lane_idx = tl.where(take, offs, lane_idx)
        lane_val = tl.where(take, race, lane_val)
    tl.store(out_ptr + b, _first_max(lane_val, lane_idx, vocab))


def sample(logits: torch.Tensor, temperature: torch.Tensor, top_k: torch.Tensor,
           top_p: torch.Tensor, min_p: torch.Tensor, seeds: torch.Tensor,
           steps: torch.Tensor) -> torch.Tensor:
    """See `deepinfer_kernels.ops.sample`: [B] int64 token ids, identical to `reference` but
    at float32 near-ties (module docstring)."""
    batch, vocab = logits.shape
    out = torch.empty(batch, dtype=torch.int64, device=logits.device)
    if batch == 0:
        return out
    probs = torch.empty((batch, vocab), dtype=torch.float32, device=logits.device)
    cuda = logits.device.type == "cuda"
    block = min(4096 if cuda else 128, triton.next_power_of_2(max(vocab, 16)))
    search_block = min(512 if cuda else 64, block)
    _sample_kernel[(batch,)](logits, temperature, top_k, top_p, min_p, seeds, steps, out, probs,
                             vocab, logits.stride(0), BLOCK=block, SEARCH_BLOCK=search_block,
                             num_warps=8 if cuda else 1)
    return out
