# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Prompt-lookup proposer on hand-built contexts and against a brute-force search."""

from __future__ import annotations

import random

import pytest

from deepinfer_dspark import NgramProposer


def brute_force(tokens: list[int], k: int, min_n: int, max_n: int) -> list[int]:
    """Longest suffix n in [min_n, max_n] with an earlier occurrence followed by a token;
    among those occurrences the rightmost, d tokens before the suffix; propose k tokens of the
    text extended with period d (each token equal to the one d before it)."""
    for n in range(max_n, min_n - 1, -1):
        if n >= len(tokens):
            continue
        suffix = tokens[len(tokens) - n:]
        starts = [i for i in range(len(tokens)) if i + n < len(tokens) and tokens[i:i + n] == suffix]
        if starts:
            period = len(tokens) - n - max(starts)
            text = list(tokens)
            while len(text) < len(tokens) + k:
                text.append(text[-period])
            return text[len(tokens):]
    return []


@pytest.mark.parametrize(("tokens", "k", "expected"), [
    ([1, 2, 3, 4, 1, 2], 2, [3, 4]),            # bigram "1 2" seen before: continue with "3 4"
    ([1, 2, 3, 4, 1, 2], 5, [3, 4, 1, 2, 3]),   # past the context's end: its period (4) again
    ([5, 1, 2, 9, 7, 1, 2, 8, 3, 1, 2], 1, [8]),  # rightmost earlier occurrence wins
    ([1, 2, 3, 9, 2, 3, 7, 1, 2, 3], 3, [9, 2, 3]),  # longest suffix "1 2 3" beats "2 3"
    ([7, 7, 7, 7], 3, [7, 7, 7]),               # overlapping match: period 1, one word k times
    ([1, 2, 3, 4], 3, []),                      # nothing repeats
    ([1], 3, []),
    ([1, 2, 1, 2], 0, []),
])
def test_hand_built(tokens, k, expected):
    assert NgramProposer(min_n=1, max_n=3).propose("r", tokens, k) == expected


def test_min_n_excludes_short_matches():
    assert NgramProposer(min_n=2, max_n=3).propose("r", [1, 5, 6, 2, 1], 2) == []
    assert NgramProposer(min_n=1, max_n=3).propose("r", [1, 5, 6, 2, 1], 2) == [5, 6]
    assert NgramProposer(min_n=1, max_n=3).propose("r", [1, 5, 6, 2, 1], 6) == [5, 6, 2, 1, 5, 6]


def test_matches_brute_force():
    rng = random.Random(0)
    for _ in range(2000):
        tokens = [rng.randrange(4) for _ in range(rng.randrange(0, 30))]
        min_n = rng.randrange(1, 4)
        max_n = rng.randrange(min_n, 6)
        k = rng.randrange(0, 6)
        assert NgramProposer(min_n, max_n).propose("r", tokens, k) == brute_force(tokens, k, min_n, max_n), \
            (tokens, k, min_n, max_n)


@pytest.mark.parametrize(("call", "field"), [
    (lambda: NgramProposer(min_n=0), "min_n"),
    (lambda: NgramProposer(min_n=3, max_n=2), "max_n"),
    (lambda: NgramProposer().propose("r", [1, 2], -1), "num_tokens"),
])
def test_bad_input(call, field):
    with pytest.raises(ValueError, match=field):
        call()


def test_the_byte_search_never_matches_across_token_boundaries():
    """`latest_continuation` searches the ids as 32-bit bytes: values that are one byte shifted
    (1, 256, 65536, ...) make byte matches that straddle two tokens, which must not count."""
    from deepinfer_dspark.ngram import latest_continuation

    rng = random.Random(1)
    values = [0, 1, 256, 65536, 1 << 24, 257]
    for _ in range(3000):
        tokens = [rng.choice(values) for _ in range(rng.randrange(0, 24))]
        n, k = rng.randrange(1, 4), rng.randrange(0, 5)
        assert latest_continuation(tokens, n, k) == brute_force(tokens, k, n, n), (tokens, n, k)
    straddle = [0, 1, 0, 5, 256, 0, 0, 1]   # bytes of "256, 0" hold those of "1, 0" one byte in
    assert latest_continuation(straddle, 2, 1) == brute_force(straddle, 1, 2, 2)
    with pytest.raises(ValueError, match="n: must be >= 1"):
        latest_continuation([1, 2], 0, 1)
    with pytest.raises(ValueError, match="k: must be >= 0"):
        latest_continuation([1, 2], 1, -1)
