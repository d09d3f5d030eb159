# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Top-N logprob alternatives: ties are broken by the lower token id, whatever the batch.

`torch.topk` orders tied values differently with the batch shape on CUDA (seen on an H200 with
bf16 logits: the top-1 alternative changed between a request alone and beside 3 neighbours);
`top_indices` must give the order of a brute-force sort by (value descending, id ascending).
"""

from __future__ import annotations

import pytest
import torch

from deepinfer_core.sampling.logprobs import token_logprobs, top_indices


def brute_force(x: torch.Tensor, k: int) -> torch.Tensor:
    return torch.tensor([sorted(range(x.shape[1]), key=lambda j: (-x[r, j].item(), j))[:k]
                         for r in range(x.shape[0])], dtype=torch.int64)


@pytest.mark.parametrize("seed", range(6))
def test_top_indices_match_a_stable_sort_with_many_ties(seed):
    gen = torch.Generator().manual_seed(seed)
    vocab = int(torch.randint(1, 400, (1,), generator=gen))
    k = int(torch.randint(1, vocab + 1, (1,), generator=gen))
    x = (torch.randn(4, vocab, generator=gen) * 2).round() / 2        # few distinct values: ties
    x[0, 0] = -0.0                                                       # ties with +0.0
    x[1, -1] = float("-inf")
    assert torch.equal(top_indices(x, k), brute_force(x, k))


def test_alternatives_do_not_depend_on_the_other_rows():
    gen = torch.Generator().manual_seed(1)
    row = torch.randn(1, 300, generator=gen).to(torch.bfloat16).float()
    row[0, [7, 50, 201]] = row.max() + 1.0                              # a three-way tie at the top
    alone = token_logprobs(row, torch.tensor([3]), [3])[0]
    crowd = torch.cat([torch.randn(5, 300, generator=gen), row, torch.randn(9, 300, generator=gen)])
    batched = token_logprobs(crowd, torch.tensor([3] * 15), [3] * 15)[5]
    assert alone == batched and alone.token_ids[1:] == [7, 50, 201]


def test_ranks_count_strictly_higher_tokens_for_ties_too():
    logits = torch.tensor([[1.0, 2.0, 2.0, 0.0, 2.0]])
    for chosen in range(5):
        lp = token_logprobs(logits, torch.tensor([chosen]), [4])[0]
        full = torch.log_softmax(logits, dim=-1)[0]
        for token, rank in zip(lp.token_ids, lp.ranks):
            assert rank == 1 + int((full > full[token]).sum()), (chosen, lp)
