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
        indices = top_indices(logprobs, k)
        top_v, top_i = logprobs.gather(1, indices).tolist(), indices.tolist()
    out = []
    for b, n in enumerate(num_top):
        values = top_v[b][:n]
        out.append(TokenLogprobs(
            token_ids=[ids_l[b]] + top_i[b][:n],
            logprobs=[chosen_l[b]] + values,
            ranks=[ranks_l[b]] + _strict_ranks(values),
        ))
    return out


def _strict_ranks(values: list[float]) -> list[int]:
    """Ranks of descending `values` as 1 + the number strictly greater (tied values share one)."""
    ranks: list[int] = []
    for j, v in enumerate(values):
        ranks.append(ranks[-1] if j and values[j - 1] == v else j + 1)
    return ranks


_INDEX_BITS = 20


def top_indices(values: torch.Tensor, k: int) -> torch.Tensor:
    """[N, k] int64 column indices of each row's k largest values, ties broken by lower index.

    `torch.topk` breaks ties in an order that depends on the batch shape on CUDA (bf16 logits tie
    often), so the top-N alternatives could change with the batch. Here each float32 value is
    mapped to an order-preserving integer and combined with its reversed column index into a
    unique int64 key, whose top-k is unique.

    Args:
        values: [N, V] float32.
        k: 1 <= k <= V.
    """
    vocab = values.shape[1]
    if vocab >= 1 << _INDEX_BITS:
        return values.sort(dim=-1, descending=True, stable=True).indices[:, :k]
    bits = (values + 0.0).view(torch.int32).to(torch.int64)    # + 0.0: -0.0 becomes +0.0 (they tie)
    ordered = torch.where(bits >= 0, bits, bits ^ 0x7FFFFFFF)   # IEEE-754 order as integer order
    column = torch.arange(vocab, dtype=torch.int64, device=values.device)
    keys = ordered * (1 << _INDEX_BITS) + ((1 << _INDEX_BITS) - 1 - column)
    return (keys.topk(k, dim=-1).values & ((1 << _INDEX_BITS) - 1)).neg_().add_((1 << _INDEX_BITS) - 1)
