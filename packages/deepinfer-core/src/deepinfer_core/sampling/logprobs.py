# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Log-probabilities of chosen tokens plus the top-N alternatives, per row."""

from __future__ import annotations

import dataclasses

import torch


@dataclasses.dataclass
class TokenLogprobs:
    """Logprobs at one position: the chosen token first, then the top-N (by rank).

    Attributes:
        token_ids: [chosen, top1, ..., topN] (the chosen token may repeat in the top-N).
        logprobs: natural-log probabilities, same order.
        ranks: 1 + the number of tokens with a strictly higher logprob, same order.
    """

    token_ids: list[int]
    logprobs: list[float]
    ranks: list[int]


def token_logprobs(logits: torch.Tensor, token_ids: torch.Tensor, num_top: list[int]) -> list[TokenLogprobs]:
    """Logprobs of `token_ids` and the top-`num_top[b]` tokens of each row's distribution.

    Args:
        logits: [N, V] raw model logits (any float dtype; computed in float32).
        token_ids: [N] int64, the chosen token of each row (sampled or the next prompt token).
        num_top: N ints >= 0.

    Returns:
        N TokenLogprobs (one device sync for the whole batch).
    """
    if logits.shape[0] == 0:
        return []
    logprobs = torch.log_softmax(logits.float(), dim=-1)
    chosen = logprobs.gather(1, token_ids.view(-1, 1))
    ranks = (logprobs > chosen).sum(dim=-1) + 1
    k = max(num_top)
    chosen_l, ranks_l, ids_l = chosen.view(-1).tolist(), ranks.tolist(), token_ids.tolist()
    top_v: list[list[float]] = [[] for _ in num_top]
    top_i: list[list[int]] = [[] for _ in num_top]
    if k > 0:
        values, indices = logprobs.topk(k, dim=-1)
        top_v, top_i = values.tolist(), indices.tolist()
    out = []
    for b, n in enumerate(num_top):
        out.append(TokenLogprobs(
            token_ids=[ids_l[b]] + top_i[b][:n],
            logprobs=[chosen_l[b]] + top_v[b][:n],
            ranks=[ranks_l[b]] + list(range(1, n + 1)),
        ))
    return out
