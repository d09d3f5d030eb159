# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Lossless verification of draft tokens against the target model.

The rule is speculative sampling (Leviathan et al. 2023, "Fast Inference from Transformers
via Speculative Decoding", section 2.3; Chen et al. 2023, "Accelerating Large Language
Model Decoding with Speculative Sampling", Algorithm 2). For the drafts
x_1..x_l of one request, with p_{k-1} the target distribution of the row that scores x_k
and q_k the distribution x_k was drawn from:

  * accept x_k iff u_k < min(1, p_{k-1}(x_k) / q_k(x_k)), u_k ~ U(0, 1); stop at the first
    rejection;
  * on a rejection at k, emit a correction drawn from norm(max(0, p_{k-1} - q_k));
  * when all l drafts are accepted, emit a bonus token drawn from p_l.

Each emitted token then has exactly the target's law. Temperature 0 is the greedy limit:
accept iff x_k is the argmax of the target logits (first maximum), and the correction or
bonus is that argmax, so the output equals plain greedy decoding.

Randomness is keyed by (request seed, absolute output index, purpose) through the
counter-based hash of `deepinfer_kernels.ops` (no device RNG, batch invariant). The purpose
is folded into the high byte of the step key: the draw for output index i and purpose P
uses `step = i + P * 2**56` (`keyed_steps`), so the streams never collide with each other
or with plain sampling for output indices below 2**56:

  * purpose 0: `ops.sample`'s own key. The bonus token is `ops.sample` of its row at its
    output index, so a round without drafts is bit-identical to plain sampling.
  * `PURPOSE_ACCEPT`: the accept test of the draft token at that output index.
  * `PURPOSE_RESIDUAL`: the exponential race drawing a correction token at that index.
  * `PURPOSE_DRAFT`: reserved for proposers that sample their drafts.

A key whose draw was computed but did not decide a token (a draft behind the first
rejection) may be drawn again in a later round; it never influenced the output before.
"""

from __future__ import annotations

import torch

from deepinfer_kernels import ops

PURPOSE_ACCEPT = 1
PURPOSE_RESIDUAL = 2
PURPOSE_DRAFT = 3
_PURPOSE_SHIFT = 56

# Residual mass at or below which the correction is drawn from p itself (only reachable
# through rounding, as the exact residual of normalised p != q has positive mass). Same
# threshold as DeepSpec's `deepspec/utils/sampling.py::sample_residual`.
RESIDUAL_MASS_EPS = 1e-8


def keyed_steps(steps: torch.Tensor, purpose: int) -> torch.Tensor:
    """Step keys of a purpose stream: `steps + purpose * 2**56`.

    Args:
        steps: int64 tensor of absolute output indices, each in [0, 2**56).
        purpose: 0 (plain sampling), PURPOSE_ACCEPT, PURPOSE_RESIDUAL or PURPOSE_DRAFT.

    Returns:
        int64 tensor shaped like `steps`.

    Raises:
        ValueError: `purpose` is outside [0, 127].
    """
    if not 0 <= purpose < 128:
        raise ValueError(f"purpose: must be in [0, 127], got {purpose}")
    return steps + (purpose << _PURPOSE_SHIFT)


def acceptance_probs(p_token: torch.Tensor, q_token: torch.Tensor) -> torch.Tensor:
    """Probability of accepting each draft token: min(1, p(x) / q(x)).

    Source: Leviathan et al. 2023, section 2.3. A token the draft could not have produced
    (q(x) == 0) is rejected.

    Args:
        p_token: target probability of each draft token, any shape, float dtype.
        q_token: draft probability of the same tokens, same shape and dtype.

    Returns:
        Tensor of the same shape and dtype, values in [0, 1].
    """
    ratio = p_token / torch.where(q_token > 0, q_token, torch.ones_like(q_token))
    return torch.where(q_token > 0, ratio.clamp(max=1.0), torch.zeros_like(p_token))


def residual_probs(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """The correction distribution after a rejection: norm(max(0, p - q)).

    Source: Leviathan et al. 2023, section 2.3 (p'(x) = norm(max(0, p(x) - q(x)))). Rows
    whose residual mass is <= RESIDUAL_MASS_EPS fall back to p (DeepSpec's
    `sample_residual` does the same).

    Args:
        p: [..., V] target probabilities, float dtype.
        q: [..., V] draft probabilities, same shape and dtype.

    Returns:
        [..., V] probabilities (rows sum to 1), dtype of p.
    """
    residual = (p - q).clamp(min=0.0)
    mass = residual.sum(dim=-1, keepdim=True)
    keep = mass > RESIDUAL_MASS_EPS
    return torch.where(keep, residual / torch.where(keep, mass, torch.ones_like(mass)), p)


def verify(target_logits: torch.Tensor, drafts: list[list[int]],
           draft_probs: list[torch.Tensor | None], temperature: torch.Tensor,
           top_k: torch.Tensor, top_p: torch.Tensor, min_p: torch.Tensor,
           seeds: torch.Tensor, steps: torch.Tensor) -> list[list[int]]:
    """Verifies the drafts of R requests in one batch and returns the tokens each emits.

    Request r owns rows `offsets[r] : offsets[r] + len(drafts[r]) + 1` of `target_logits`,
    where `offsets[r]` is the sum of `len(drafts[i]) + 1` over i < r. Row j of a request
    scores its draft j + 1 (the anchor row scores draft 1); the last row gives the bonus.
    The target distribution of a row is `ops.sampling_probs` with the request's
    temperature / top-k / top-p / min-p, i.e. exactly what `ops.sample` draws from; the
    draft distributions must have been filtered the same way by the proposer.

    Args:
        target_logits: [N, V] float32, N = sum(len(d) + 1 for d in drafts); already masked
            by the engine (penalties, grammar bitmasks).
        drafts: R lists of draft token ids in [0, V) (empty: a plain decode step).
        draft_probs: R entries: [len(drafts[r]), V] float32, row k the exact distribution
            draft k + 1 was sampled from, or None for a deterministic proposer (n-gram,
            greedy drafter), whose q is one-hot on the draft.
        temperature: [R] float32; 0 selects greedy verification.
        top_k: [R] int64 (<= 0: off). top_p: [R] float32. min_p: [R] float32.
        seeds: [R] int64, the requests' seeds.
        steps: [R] int64, output index (tokens generated so far) of the first token this
            round decides; must be < 2**56.

    Returns:
        R lists: the accepted draft prefix followed by one correction or bonus token.

    Raises:
        ValueError: a shape, dtype, device or token id does not match (the message names
            the field).
    """
    _check_inputs(target_logits, drafts, draft_probs, temperature, top_k, top_p, min_p, seeds, steps)
    num_req = len(drafts)
    if num_req == 0:
        return []
    device = target_logits.device
    if all(t == 0 for t in temperature.tolist()):
        return verify_greedy(target_logits, drafts)
    lens = torch.tensor([len(d) for d in drafts], dtype=torch.int64, device=device)
    offsets = torch.cumsum(lens + 1, 0) - (lens + 1)
    row_req = torch.repeat_interleave(torch.arange(num_req, device=device), lens + 1)
    probs = ops.sampling_probs(target_logits, temperature[row_req], top_k[row_req],
                               top_p[row_req], min_p[row_req])

    num_accepted = lens.clone()
    if any(drafts):
        d_req = torch.repeat_interleave(torch.arange(num_req, device=device), lens)
        d_pos = torch.arange(d_req.numel(), device=device) - (torch.cumsum(lens, 0) - lens)[d_req]
        d_row = offsets[d_req] + d_pos
        d_tok = torch.tensor([t for d in drafts for t in d], dtype=torch.int64, device=device)
        alpha = acceptance_probs(probs[d_row, d_tok], _draft_token_probs(drafts, draft_probs, device))
        greedy_hit = (target_logits.argmax(dim=-1)[d_row] == d_tok).to(alpha.dtype)
        alpha = torch.where(temperature[d_req] == 0, greedy_hit, alpha)
        u = ops.keyed_uniforms(seeds[d_req], keyed_steps(steps[d_req] + d_pos, PURPOSE_ACCEPT), 1)
        rejected = u[:, 0] >= alpha
        num_accepted.scatter_reduce_(0, d_req[rejected], d_pos[rejected], reduce="amin")

    final_row = offsets + num_accepted
    out_steps = steps + num_accepted
    tokens = ops.sample(target_logits[final_row], temperature, top_k, top_p, min_p, seeds, out_steps)

    accepted_list, temp_list = num_accepted.tolist(), temperature.tolist()
    corrected = [r for r in range(num_req) if accepted_list[r] < len(drafts[r]) and temp_list[r] > 0]
    if corrected:
        idx = torch.tensor(corrected, dtype=torch.int64, device=device)
        q_rows = torch.stack([_draft_row(drafts[r], draft_probs[r], accepted_list[r],
                                         target_logits.shape[1], device) for r in corrected])
        residual = residual_probs(probs[final_row[idx]], q_rows)
        u = ops.keyed_uniforms(seeds[idx], keyed_steps(out_steps[idx], PURPOSE_RESIDUAL),
                               target_logits.shape[1])
        # The exponential race argmax_v r_v / E_v, E_v = -ln u_v, draws v with prob r_v
        # (the same draw ops.sample makes).
        tokens[idx] = (residual / -torch.log(u)).argmax(dim=-1)
    token_list = tokens.tolist()
    return [list(drafts[r][:accepted_list[r]]) + [token_list[r]] for r in range(num_req)]


def _draft_token_probs(drafts: list[list[int]], draft_probs: list[torch.Tensor | None],
                       device: torch.device) -> torch.Tensor:
    """[D] float32: q of every draft token (1 for a deterministic proposer)."""
    parts = []
    for tokens, q in zip(drafts, draft_probs):
        if not tokens:
            continue
        if q is None:
            parts.append(torch.ones(len(tokens), dtype=torch.float32, device=device))
        else:
            index = torch.tensor(tokens, dtype=torch.int64, device=device)
            parts.append(q[torch.arange(len(tokens), device=device), index])
    return torch.cat(parts)


def _draft_row(tokens: list[int], q: torch.Tensor | None, k: int, vocab: int,
               device: torch.device) -> torch.Tensor:
    """[V] float32: the distribution draft k (0-based) was drawn from."""
    if q is not None:
        return q[k]
    row = torch.zeros(vocab, dtype=torch.float32, device=device)
    row[tokens[k]] = 1.0
    return row


def _check_inputs(target_logits, drafts, draft_probs, temperature, top_k, top_p, min_p,
                  seeds, steps) -> None:
    if not isinstance(target_logits, torch.Tensor) or target_logits.dim() != 2 \
            or target_logits.dtype != torch.float32:
        raise ValueError("target_logits: expected a [N, V] float32 tensor")
    num_rows, vocab = target_logits.shape
    num_req = len(drafts)
    if len(draft_probs) != num_req:
        raise ValueError(f"draft_probs: expected {num_req} entries (one per request), "
                         f"got {len(draft_probs)}")
    device = target_logits.device
    for name, t, dtype in (("temperature", temperature, torch.float32), ("top_k", top_k, torch.int64),
                           ("top_p", top_p, torch.float32), ("min_p", min_p, torch.float32),
                           ("seeds", seeds, torch.int64), ("steps", steps, torch.int64)):
        if not isinstance(t, torch.Tensor) or t.shape != (num_req,) or t.dtype != dtype:
            raise ValueError(f"{name}: expected a [{num_req}] {dtype} tensor")
        if t.device != device:
            raise ValueError(f"{name}: on {t.device}, target_logits on {device}")
    expected = sum(len(d) + 1 for d in drafts)
    if num_rows != expected:
        raise ValueError(f"target_logits: expected {expected} rows (sum of len(drafts[r]) + 1), "
                         f"got {num_rows}")
    for r, (tokens, q) in enumerate(zip(drafts, draft_probs)):
        if any(not isinstance(t, int) or not 0 <= t < vocab for t in tokens):
            raise ValueError(f"drafts[{r}]: token ids must be ints in [0, {vocab})")
        if q is None:
            continue
        if not isinstance(q, torch.Tensor) or q.shape != (len(tokens), vocab) or q.dtype != torch.float32:
            raise ValueError(f"draft_probs[{r}]: expected a [{len(tokens)}, {vocab}] float32 tensor")
        if q.device != device:
            raise ValueError(f"draft_probs[{r}]: on {q.device}, target_logits on {device}")


def verify_greedy(target_logits: torch.Tensor, drafts: list[list[int]]) -> list[list[int]]:
    """`verify` when every request is greedy: accept drafts while they equal the target's argmax
    (first maximum, `ops.sample`'s greedy rule), then emit the argmax of the first mismatch or the
    bonus row. One device-to-host copy; no probabilities or random draws.

    Args:
        target_logits: `[N, V]`, N = sum(len(d) + 1 for d in drafts), rows laid out as for `verify`.
        drafts: R lists of draft token ids (validated by the caller).

    Returns:
        R lists: the accepted draft prefix followed by the target's token.
    """
    best = target_logits.argmax(dim=-1).tolist()
    out, offset = [], 0
    for draft in drafts:
        rows = best[offset: offset + len(draft) + 1]
        n = 0
        while n < len(draft) and draft[n] == rows[n]:
            n += 1
        out.append(list(draft[:n]) + [rows[n]])
        offset += len(draft) + 1
    return out
