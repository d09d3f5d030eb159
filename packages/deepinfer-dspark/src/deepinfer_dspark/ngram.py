# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Prompt-lookup (n-gram) proposer: drafts by copying what followed the context's suffix.

Prompt lookup decoding (Saxena 2023; vLLM's `ngram` method with prompt_lookup_min/max):
find an earlier occurrence of the last n tokens and propose the tokens that followed it. An
occurrence d tokens before the suffix reads the text as repeating with period d, so the drafts
continue past the context's end with that period (`continue_period`): a reply stuck on one word
(d = 1) drafts it k times instead of once. Deterministic, so the verifier treats its q as
one-hot on the draft. `NgramSpecProposer` is the engine-facing
`deepinfer_core.interfaces.Proposer` over it (method `ngram`).
"""

from __future__ import annotations

from array import array

from deepinfer_core.interfaces import Draft, DraftRequest


class NgramProposer:
    """Prompt lookup over one context (the engine-facing `ngram` proposer wraps it).

    For n from `max_n` down to `min_n`: take the context's last n tokens, find their
    rightmost earlier occurrence that is followed by at least one token, and propose the
    `num_tokens` tokens following it, continued with its period once they reach the context's
    end (`continue_period`). The first n with a match wins; no match -> no draft.
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
            `num_tokens` token ids, or [] without a match.

        Raises:
            ValueError: `num_tokens` < 0.
        """
        if num_tokens < 0:
            raise ValueError(f"num_tokens: must be >= 0, got {num_tokens}")
        if num_tokens == 0 or len(token_ids) < self.min_n + 1:
            return []
        ids = list(token_ids)
        data = _as_bytes(ids)
        for n in range(min(self.max_n, len(ids) - 1), self.min_n - 1, -1):
            found = latest_continuation(ids, n, num_tokens, data)
            if found:
                return found
        return []


WIDTH = array("i").itemsize   # bytes per token id in the search's byte string


def _as_bytes(ids: list[int]) -> bytes:
    return array("i", ids).tobytes()


def latest_continuation(ids: list[int], n: int, k: int, data: bytes | None = None) -> list[int]:
    """`k` tokens continuing the latest earlier occurrence of the last `n` tokens of `ids`
    (`latest_occurrence`, then `continue_period`), or [] without one.

    Raises:
        ValueError: `n` < 1 or `k` < 0.
    """
    if k < 0:
        raise ValueError(f"k: must be >= 0, got {k}")
    if k == 0:
        return []
    start = latest_occurrence(ids, n, data)
    return continue_period(ids, start, n, k) if start >= 0 else []


def continue_period(ids: list[int], start: int, n: int, k: int, size: int | None = None) -> list[int]:
    """The `k` tokens after the occurrence of the last `n` tokens of `ids` at `start`: the
    text read as repeating with period d = len(ids) - n - start, each draft the token d
    positions before it (from `ids`, then from the drafts themselves). With d >= k that is
    `ids[start + n:start + n + k]`. `size`: read `ids` as its first `size` tokens (a live list
    with placeholders past them)."""
    size = len(ids) if size is None else size
    period = size - n - start
    if k <= 0:
        return []
    if period >= k:   # (the common case, a slice: session 74)
        return list(ids[start + n:start + n + k])
    drafts: list[int] = []
    for i in range(k):
        back = size - period + i
        drafts.append(ids[back] if back < size else drafts[back - size])
    return drafts


def latest_occurrence(ids: list[int], n: int, data: bytes | None = None) -> int:
    """Where the latest earlier occurrence of the last `n` tokens of `ids` starts (one followed by
    at least one token; it may overlap the suffix), or -1. A byte search (`bytes.rfind` over the
    ids as 32-bit integers, C speed: O(len) per call, no tensor), so a proposer can afford it on
    the host every few steps; `data`: `ids` as bytes when the caller already has them.

    Raises:
        ValueError: `n` < 1.
    """
    if n < 1:
        raise ValueError(f"n: must be >= 1, got {n}")
    if len(ids) <= n:
        return -1
    return latest_in_bytes(_as_bytes(ids) if data is None else data, n)


def latest_in_bytes(data: bytes | bytearray, n: int, lo: int = 0) -> int:
    """`latest_occurrence` over token ids already as bytes (32-bit, `WIDTH` a token; a caller
    may append to them as a request grows instead of converting its context each search): the
    start (in tokens) of the latest earlier occurrence of the last `n` tokens at or after token
    `lo`, or -1. n >= 1 is the caller's to check."""
    if len(data) <= n * WIDTH:
        return -1
    pattern = bytes(data[len(data) - n * WIDTH:])
    end = len(data) - WIDTH   # the occurrence must end before the last token
    while True:
        pos = data.rfind(pattern, lo * WIDTH, end)
        if pos < 0:
            return -1
        if pos % WIDTH == 0:   # aligned on a token, not straddling two
            return pos // WIDTH
        end = pos + len(pattern) - 1   # the next candidate starts before this one


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
