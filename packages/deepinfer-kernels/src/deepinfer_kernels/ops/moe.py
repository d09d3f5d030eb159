# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Mixture-of-experts layer: routing, grouped expert SwiGLU MLPs, weighted combine."""

from __future__ import annotations

import torch

from deepinfer_kernels._registry import dispatch
from deepinfer_kernels.ops._checks import (FLOAT_DTYPES, check_int, check_same_device, check_size,
                                           check_tensor)

SCORING = ("softmax", "sigmoid")


def fused_moe(hidden: torch.Tensor, router_logits: torch.Tensor, w13: torch.Tensor,
              w2: torch.Tensor, top_k: int, scoring: str = "softmax",
              e_score_correction_bias: torch.Tensor | None = None, n_group: int | None = None,
              topk_group: int | None = None, renormalize: bool = True,
              routed_scaling_factor: float = 1.0, *, batch_invariant: bool = False,
              backend: str | None = None) -> torch.Tensor:
    """Routes each token to `top_k` experts and sums their weighted SwiGLU MLP outputs.

    Routing (float32): `s = softmax(router_logits)` or `sigmoid(router_logits)`; selection
    uses `c = s + e_score_correction_bias` (bias only for selection, DeepSeek-V3). With
    groups, experts form `n_group` equal contiguous groups, a group's score is the sum of its
    top-2 `c` (DeepSeek-V3), and only the `topk_group` best groups stay eligible. The top_k
    eligible experts by `c` get weights `s` (renormalised to sum 1 if `renormalize`), times
    `routed_scaling_factor`.
    Expert e (Mixtral / DeepSeek SwiGLU MLP): `y = (silu(x Wg^T) * (x Wu^T)) W2^T` with
    `[Wg; Wu] = w13[e]`; GEMMs accumulate in float32, the activation is rounded to the
    input dtype before the down projection, and the weighted combine is in float32.

    Args:
        hidden: [T, H] float32/float16/bfloat16; T may be 0.
        router_logits: [T, E] float32/float16/bfloat16 (need not match `hidden`).
        w13: [E, 2I, H], dtype of `hidden`: gate rows then up rows.
        w2: [E, H, I], dtype of `hidden`.
        top_k: Experts per token, 1 <= top_k <= E.
        scoring: "softmax" or "sigmoid".
        e_score_correction_bias: Optional [E] float, added to the scores for selection only.
        n_group: Optional number of expert groups (divides E, groups of >= 2 experts).
        topk_group: Groups kept per token when `n_group` is set, 1..n_group.
        renormalize: Normalise the selected weights to sum 1 before scaling.
        routed_scaling_factor: Multiplies the final weights.
        batch_invariant: each token computed alone with its experts summed in slot order, so a
            token's output bits do not depend on the other tokens (deterministic mode).
        backend: Implementation to use; None selects.

    Returns:
        [T, H] in `hidden.dtype`.

    Raises:
        ValueError: a shape, dtype, device or routing parameter is invalid (named).
    """
    check_tensor("hidden", hidden, 2, FLOAT_DTYPES)
    check_tensor("router_logits", router_logits, 2, FLOAT_DTYPES)
    check_size("router_logits", router_logits, 0, hidden.shape[0], "tokens of hidden")
    num_experts = router_logits.shape[1]
    check_tensor("w13", w13, 3, (hidden.dtype,))
    check_size("w13", w13, 0, num_experts, "experts of router_logits")
    check_size("w13", w13, 2, hidden.shape[1], "hidden size")
    if w13.shape[1] % 2:
        raise ValueError(f"w13: dimension 1 must be even (gate and up), got {w13.shape[1]}")
    check_tensor("w2", w2, 3, (hidden.dtype,))
    check_size("w2", w2, 0, num_experts, "experts of router_logits")
    check_size("w2", w2, 1, hidden.shape[1], "hidden size")
    check_size("w2", w2, 2, w13.shape[1] // 2, "intermediate size of w13")
    check_int("top_k", top_k)
    if not 1 <= top_k <= num_experts:
        raise ValueError(f"top_k: must be in [1, {num_experts}], got {top_k}")
    for name, value in (("n_group", n_group), ("topk_group", topk_group)):
        if value is not None:
            check_int(name, value)
    if isinstance(routed_scaling_factor, bool) or not isinstance(routed_scaling_factor, (int, float)):
        raise ValueError(f"routed_scaling_factor: must be a number, got {routed_scaling_factor!r}")
    if not isinstance(renormalize, bool):
        raise ValueError(f"renormalize: must be a bool, got {renormalize!r}")
    if scoring not in SCORING:
        raise ValueError(f"scoring: {scoring!r} not in {SCORING}")
    if e_score_correction_bias is not None:
        check_tensor("e_score_correction_bias", e_score_correction_bias, 1, FLOAT_DTYPES)
        check_size("e_score_correction_bias", e_score_correction_bias, 0, num_experts, "experts")
    _check_groups(num_experts, top_k, n_group, topk_group)
    check_same_device([("hidden", hidden), ("router_logits", router_logits), ("w13", w13),
                       ("w2", w2), ("e_score_correction_bias", e_score_correction_bias)])
    if not isinstance(batch_invariant, bool):
        raise ValueError(f"batch_invariant: must be a bool, got {batch_invariant!r}")
    return dispatch("fused_moe", hidden, backend, hidden, router_logits, w13, w2, top_k,
                    scoring, e_score_correction_bias, n_group, topk_group, renormalize,
                    float(routed_scaling_factor), batch_invariant=batch_invariant)


def _check_groups(num_experts: int, top_k: int, n_group: int | None,
                  topk_group: int | None) -> None:
    if n_group is None:
        if topk_group is not None:
            raise ValueError("topk_group: set without n_group")
        return
    if n_group <= 0 or num_experts % n_group or num_experts // n_group < 2:
        raise ValueError(f"n_group: must divide {num_experts} experts into groups of >= 2, "
                         f"got {n_group}")
    if topk_group is None or not 1 <= topk_group <= n_group:
        raise ValueError(f"topk_group: must be in [1, {n_group}], got {topk_group}")
    if top_k > topk_group * (num_experts // n_group):
        raise ValueError(f"top_k: {top_k} exceeds the experts in {topk_group} groups")
