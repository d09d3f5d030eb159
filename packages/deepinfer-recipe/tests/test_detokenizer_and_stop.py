# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Incremental detokenization against the real tokenizers' own decode; stop strings
against a brute-force search."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deepinfer_recipe import IncrementalDetokenizer, StopStringMatcher

TEXTS = [
    "Hello, world! The capital of France is Paris.",
    "北京欢迎你 🎉🎉 naïve café — ok",
    "emoji 👩‍👩‍👧‍👦 family and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math",
    "  leading spaces\n\n\ttabs and \u0301 lone combining mark",
]


@pytest.mark.parametrize("which", ["qwen3_tok", "deepseek_v3_tok"])
@pytest.mark.parametrize("text", TEXTS)
def test_streamed_text_equals_full_decode(which, text, request):
    tok = request.getfixturevalue(which)
    ids = tok.encode_plain(text)
    rng = random.Random(len(text))
    for _ in range(3):
        detok = IncrementalDetokenizer(tok.decode)
        out, i = [], 0
        while i < len(ids):
            step = rng.randint(1, 3)
            piece = detok.push(ids[i : i + step])
            assert "\ufffd" not in piece
            out.append(piece)
            i += step
        out.append(detok.flush())
        assert "".join(out) == tok.decode(ids) == text


def test_detokenizer_rejects_bad_max_pending():
    with pytest.raises(ValueError, match="max_pending"):
        IncrementalDetokenizer(lambda ids: "", max_pending=0)


def _brute_force(text: str, stops: list[str]) -> tuple[str, str | None]:
    """The stop string that completes first (earliest end; ties: longest), by exhaustive search."""
    hits = [(i + len(s), i, s) for s in stops for i in range(len(text)) if text.startswith(s, i)]
    if not hits:
        return text, None
    _, pos, stop = min(hits)
    return text[:pos], stop


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet="abcXY\n", max_size=40),
    stops=st.lists(st.text(alphabet="abcXY\n", min_size=1, max_size=4), max_size=3),
    cuts=st.lists(st.integers(0, 40), max_size=6),
)
def test_stop_matcher_equals_brute_force(text, stops, cuts):
    points = sorted({c % (len(text) + 1) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    m = StopStringMatcher(stops)
    out = "".join(m.push(c) for c in chunks) + m.flush()
    assert (out, m.matched) == _brute_force(text, stops)
