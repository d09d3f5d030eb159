# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Reference mixture-of-experts (see `deepinfer_kernels.ops.fused_moe`)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def select_experts(router_logits: torch.Tensor, top_k: int, scoring: str,
                   bias: torch.Tensor | None, n_group: int | None, topk_group: int | None,
                   renormalize: bool, routed_scaling_factor: float
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """Routing: returns ([T, top_k] float32 weights, [T, top_k] int64 expert ids)."""
    logits = router_logits.float()
    scores = logits.softmax(dim=-1) if scoring == "softmax" else logits.sigmoid()
    choice = scores if bias is None else scores + bias.float()
    if n_group is not None:
        tokens, experts = choice.shape
        grouped = choice.view(tokens, n_group, experts // n_group)
        group_scores = grouped.topk(2, dim=-1).values.sum(dim=-1)           # [T, n_group]
        best = group_scores.topk(topk_group, dim=-1).indices
        keep = torch.zeros_like(group_scores, dtype=torch.bool).scatter_(1, best, True)
        keep = keep.repeat_interleave(experts // n_group, dim=1)
        choice = choice.masked_fill(~keep, float("-inf"))
    ids = choice.topk(top_k, dim=-1).indices
    weights = scores.gather(1, ids)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights * routed_scaling_factor, ids


def fused_moe(hidden: torch.Tensor, router_logits: torch.Tensor, w13: torch.Tensor,
              w2: torch.Tensor, top_k: int, scoring: str, e_score_correction_bias: torch.Tensor | None,
              n_group: int | None, topk_group: int | None, renormalize: bool,
              routed_scaling_factor: float, batch_invariant: bool = False) -> torch.Tensor:
    weights, ids = select_experts(router_logits, top_k, scoring, e_score_correction_bias,
                                  n_group, topk_group, renormalize, routed_scaling_factor)
    if batch_invariant:
        return _per_token(hidden, w13, w2, weights, ids)
    out = torch.zeros(hidden.shape, dtype=torch.float32, device=hidden.device)
    for expert in ids.unique().tolist():
        tokens, slots = (ids == expert).nonzero(as_tuple=True)
        x = hidden[tokens].float()
        gate, up = (x @ w13[expert].float().t()).chunk(2, dim=-1)
        act = (F.silu(gate) * up).to(hidden.dtype).float()
        y = act @ w2[expert].float().t()
        out.index_add_(0, tokens, y * weights[tokens, slots].unsqueeze(1))
    return out.to(hidden.dtype)


def _per_token(hidden: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, weights: torch.Tensor,
               ids: torch.Tensor) -> torch.Tensor:
    """Batch-invariant variant: each token alone (one-row matmuls), its experts summed in slot order."""
    out = torch.empty(hidden.shape, dtype=torch.float32, device=hidden.device)
    for t in range(hidden.shape[0]):
        x = hidden[t:t + 1].float().clone()
        acc = torch.zeros((1, hidden.shape[1]), dtype=torch.float32, device=hidden.device)
        for slot, expert in enumerate(ids[t].tolist()):
            gate, up = (x @ w13[expert].float().t()).chunk(2, dim=-1)
            act = (F.silu(gate) * up).to(hidden.dtype).float()
            acc = acc + (act @ w2[expert].float().t()) * weights[t, slot]
        out[t] = acc[0]
    return out.to(hidden.dtype)
