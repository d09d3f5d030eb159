# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Prompt-lookup (n-gram) proposer: drafts by copying what followed the context's suffix.

Prompt lookup decoding (Saxena 2023; vLLM's `ngram` method with prompt_lookup_min/max):
find an earlier occurrence of the last n tokens and propose the tokens that followed it.
Deterministic, so the verifier treats its q as one-hot on the draft. `NgramSpecProposer` is the
engine-facing `deepinfer_core.interfaces.Proposer` over it (method `ngram`).
"""

from __future__ import annotations

import torch
from deepinfer_core.interfaces import Draft, DraftRequest


class NgramProposer:
    """Prompt lookup over one context (the engine-facing `ngram` proposer wraps it).

    For n from `max_n` down to `min_n`: take the context's last n tokens, find their
    rightmost earlier occurrence that is followed by at least one token, and propose up to
    `num_tokens` tokens following it. The first n with a match wins; no match -> no draft.
    Stateless: `request_id` is ignored.

    Args:
        min_n: shortest suffix to match (>= 1).
        max_n: longest suffix to match (>= min_n).

    Raises:
        ValueError: bad n-gram bounds.
    """

    def __init__(self, min_n: int = 1, max_n: int = 4):
        if min_n < 1:
            raise ValueError(f"min_n: must be >= 1, got {min_n}")
        if max_n < min_n:
            raise ValueError(f"max_n: must be >= min_n ({min_n}), got {max_n}")
        self.min_n = min_n
        self.max_n = max_n

    def propose(self, request_id: str, token_ids: list[int], num_tokens: int) -> list[int]:
        """Up to `num_tokens` draft tokens continuing `token_ids` (prompt + output so far).

        Args:
            request_id: unused.
            token_ids: the request's context.
            num_tokens: maximum draft length (>= 0).

        Returns:
            A list of 0..num_tokens token ids.

        Raises:
            ValueError: `num_tokens` < 0.
        """
        if num_tokens < 0:
            raise ValueError(f"num_tokens: must be >= 0, got {num_tokens}")
        length = len(token_ids)
        if num_tokens == 0 or length < self.min_n + 1:
            return []
        context = torch.tensor(token_ids, dtype=torch.int64)
        for n in range(min(self.max_n, length - 1), self.min_n - 1, -1):
            # Windows starting at 0 .. length - n - 1: each is followed by a token.
            windows = context[:-1].unfold(0, n, 1)
            hits = (windows == context[-n:]).all(dim=1).nonzero()
            if hits.numel():
                start = int(hits[-1, 0]) + n
                return token_ids[start:start + num_tokens]
        return []


class NgramSpecProposer:
    """Prompt-lookup drafts for the engine (no state, no target features)."""

    def __init__(self, min_n: int = 1, max_n: int = 4) -> None:
        self.lookup = NgramProposer(min_n, max_n)

    def propose(self, requests: list[DraftRequest]) -> list[Draft]:
        return [Draft(self.lookup.propose(r.request_id, list(r.token_ids), r.max_tokens)) for r in requests]

    def commit(self, request_id: str, num_tokens: int) -> None:
        pass

    def remove(self, request_id: str) -> None:
        pass
