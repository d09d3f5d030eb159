# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Incremental and final detokenization against the tokenizers' own full-sequence decode (the
real Qwen3 / DeepSeek-V3 byte-level BPEs, and a Llama-style byte-fallback BPE built here), and
final against incremental over the same ids; stop strings against a brute-force search."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deepinfer_recipe import FinalDetokenizer, IncrementalDetokenizer, StopStringMatcher

TEXTS = [
    "Hello, world! The capital of France is Paris.",
    "北京欢迎你 🎉🎉 naïve café — ok",
    "emoji 👩‍👩‍👧‍👦 family and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math",
    "  leading spaces\n\n\ttabs and \u0301 lone combining mark",
    "Grüße, café, naïve — déjà vu.",
    "日本語のテキストと中文字符",
    "emoji 😀👍🏽 family 👨‍👩‍👧 flags 🇫🇷",
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


@pytest.mark.parametrize("field,kwargs", [("max_pending", {"max_pending": 3}), ("context", {"context": -1})])
def test_detokenizer_rejects_bad_settings(field, kwargs):
    with pytest.raises(ValueError, match=field):
        IncrementalDetokenizer(lambda ids: "", **kwargs)


@pytest.fixture(scope="module")
def byte_fallback():
    """A Llama/SentencePiece-style BPE: `▁` word marker, <0xNN> byte fallback, leading-space strip."""
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    pieces = ["▁", "H", "e", "l", "o", "w", "r", "d", "!", "He", "ll", "llo", "Hello", "▁w", "▁wor", "▁world",
              "or", "é", "▁é", "日", "本", "a", "b", "c", "▁a"]
    for p in pieces:
        vocab.setdefault(p, len(vocab))
    merges = [("H", "e"), ("l", "l"), ("ll", "o"), ("He", "llo"), ("▁", "w"), ("▁w", "o"), ("o", "r"),
              ("▁w", "or"), ("▁wor", "l"), ("▁", "é"), ("▁", "a")]
    merges = [m for m in merges if "".join(m) in vocab]
    models, normalizers, decoders = tokenizers.models, tokenizers.normalizers, tokenizers.decoders
    tok = tokenizers.Tokenizer(models.BPE(vocab=vocab, merges=merges, byte_fallback=True, unk_token="<unk>",
                                          fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    tok.add_special_tokens(["<s>", "</s>"])
    return tok


def _stream(tok, prompt: list[int], output: list[int]) -> tuple[list[str], str]:
    d = IncrementalDetokenizer(tok.decode, prompt)
    return [d.push([t]) for t in output], d.flush()


def _reference(tok, prompt: list[int], output: list[int]) -> str:
    ctx = prompt[-IncrementalDetokenizer(tok.decode).context :]
    return tok.decode(ctx + output)[len(tok.decode(ctx)) :]


def _prefix_stable(tok, ctx: list[int], output: list[int]) -> bool:
    full = tok.decode(ctx + output)
    return all(full.startswith(tok.decode(ctx + output[:k]).rstrip("\ufffd")) for k in range(len(output) + 1))


@pytest.mark.parametrize("text", TEXTS)
def test_byte_fallback_stream_rebuilds_text_without_broken_characters(byte_fallback, text):
    prompt = byte_fallback.encode("Answer:").ids
    ids = byte_fallback.encode(" " + text, add_special_tokens=False).ids
    pieces, tail = _stream(byte_fallback, prompt, ids)
    assert "".join(pieces) + tail == _reference(byte_fallback, prompt, ids)
    assert ("".join(pieces) + tail).strip() == text.strip()
    assert all("\ufffd" not in p for p in pieces), "a delta carried a broken character"


def test_byte_fallback_characters_are_withheld_until_complete(byte_fallback):
    ids = byte_fallback.encode("x 😀 日", add_special_tokens=False).ids
    partial = [t for t in ids if byte_fallback.decode([t]).endswith("\ufffd")]
    assert partial, "the text must contain tokens holding part of a character"
    pieces, tail = _stream(byte_fallback, byte_fallback.encode("a").ids, ids)
    assert "" in pieces and tail == ""
    assert [p for p in pieces if p] == [p for p in pieces if p and "\ufffd" not in p]


def test_emoji_from_byte_fallback_tokens(byte_fallback):
    ids = byte_fallback.encode("a😀", add_special_tokens=False).ids
    assert [byte_fallback.id_to_token(t) for t in ids[-4:]] == ["<0xF0>", "<0x9F>", "<0x98>", "<0x80>"]
    pieces, _ = _stream(byte_fallback, byte_fallback.encode("hi").ids, ids)
    assert pieces[-4:] == ["", "", "", "😀"]


def test_byte_fallback_random_token_streams_match_full_decode(byte_fallback):
    vocab = byte_fallback.get_vocab_size()
    context = IncrementalDetokenizer(byte_fallback.decode).context
    rng = random.Random(17)
    checked = 0
    for _ in range(300):
        prompt = [rng.randrange(vocab) for _ in range(rng.randint(1, 10))]
        output = [rng.randrange(vocab) for _ in range(rng.randint(1, 30))]
        pieces, tail = _stream(byte_fallback, prompt, output)
        # Without prefix stability no stream can match the full decode (see the class docstring).
        if _prefix_stable(byte_fallback, prompt[-context:], output):
            assert "".join(pieces) + tail == _reference(byte_fallback, prompt, output), (prompt, output)
            checked += 1
    assert checked >= 100


def test_genuine_replacement_characters_are_released_without_waiting_for_the_end(byte_fallback):
    lone = byte_fallback.token_to_id("<0x80>")  # a continuation byte alone: invalid UTF-8 forever
    prompt = byte_fallback.encode("Hello").ids
    output = [lone] * 30 + byte_fallback.encode("ab", add_special_tokens=False).ids
    d = IncrementalDetokenizer(byte_fallback.decode, prompt)
    pieces, max_window = [], 0
    for t in output:
        pieces.append(d.push([t]))
        max_window = max(max_window, d.window)
    tail = d.flush()
    assert "".join(pieces) + tail == "\ufffd" * 30 + " ab" == _reference(byte_fallback, prompt, output)
    assert next(i for i, p in enumerate(pieces) if p) < 12, "a run of U+FFFD must not hold all text back"
    assert max_window <= 16


def _streamed(decode, prompt: list[int], output: list[int]) -> str:
    d = IncrementalDetokenizer(decode, prompt)
    return "".join(d.push([t]) for t in output) + d.flush()


def _final(decode, prompt: list[int], output: list[int], chunk: int = 1) -> str:
    d = FinalDetokenizer(decode, prompt)
    assert all(d.push(output[i:i + chunk]) == "" for i in range(0, len(output), chunk))
    return d.flush()


@pytest.mark.parametrize("which", ["qwen3_tok", "deepseek_v3_tok"])
@pytest.mark.parametrize("text", TEXTS)
def test_final_text_equals_full_decode_and_the_stream(which, text, request):
    tok = request.getfixturevalue(which)
    prompt, ids = tok.encode_plain("Answer:"), tok.encode_plain(" " + text)
    for chunk in (1, 3, len(ids)):
        assert _final(tok.decode, prompt, ids, chunk) == _streamed(tok.decode, prompt, ids) == " " + text


@pytest.mark.parametrize("which", ["qwen3_tok", "byte_fallback"])
def test_random_ids_give_the_stream_where_decoding_is_prefix_stable(which, request):
    tok = request.getfixturevalue(which)
    decode = tok.decode
    vocab = max(tok.added_tokens.values()) + 1 if which == "qwen3_tok" else tok.get_vocab_size()
    rng = random.Random(23)
    stable = unstable = 0
    for _ in range(300):
        prompt = [rng.randrange(vocab) for _ in range(rng.randint(0, 10))]
        output = [rng.randrange(vocab) for _ in range(rng.randint(1, 30))]
        final = _final(decode, prompt, output, rng.randint(1, 4))
        ctx = prompt[-FinalDetokenizer(decode).context:]
        if _prefix_stable(tok, ctx, output):
            assert final == _streamed(decode, prompt, output) == _reference(tok, prompt, output), (prompt, output)
            stable += 1
        else:   # the tokenizer's own text of the whole output, or the stream where that is not defined
            whole, head = decode(ctx + output), decode(ctx)
            assert final == (whole[len(head):] if whole.startswith(head) else _streamed(decode, prompt, output))
            unstable += 1
    assert stable >= 100


def test_a_context_ending_inside_a_character_gives_the_stream(byte_fallback):
    ids = byte_fallback.encode("a😀b", add_special_tokens=False).ids
    cut = next(i for i, t in enumerate(ids) if byte_fallback.id_to_token(t) == "<0x9F>")
    prompt, output = ids[:cut], ids[cut:]        # the prompt ends after the emoji's first byte
    head, whole = byte_fallback.decode(prompt[-6:]), byte_fallback.decode(prompt[-6:] + output)
    assert head.endswith("\ufffd") and not whole.startswith(head), "the fallback path must be taken"
    assert _final(byte_fallback.decode, prompt, output) == _streamed(byte_fallback.decode, prompt, output)


def test_flush_returns_each_id_once_and_keeps_the_context(byte_fallback):
    ids = byte_fallback.encode(" Hello world é 日本", add_special_tokens=False).ids
    d = FinalDetokenizer(byte_fallback.decode, byte_fallback.encode("hi").ids)
    assert d.flush() == ""
    d.push(ids[:3])
    first = d.flush()
    d.push(ids[3:])
    assert first + d.flush() == _streamed(byte_fallback.decode, byte_fallback.encode("hi").ids, ids)
    assert d.flush() == ""


def test_decode_errors_propagate_and_bad_settings_name_the_field():
    def decode(ids):
        raise KeyError("unknown id")

    d = FinalDetokenizer(decode, [1, 2])
    assert d.push([3]) == ""
    with pytest.raises(KeyError):
        d.flush()
    with pytest.raises(ValueError, match="context"):
        FinalDetokenizer(lambda ids: "", context=-1)


def test_context_keeps_the_leading_space_a_sequence_start_strips(byte_fallback):
    prompt, ids = byte_fallback.encode("Answer:").ids, byte_fallback.encode("Hello", add_special_tokens=False).ids
    assert byte_fallback.decode(ids) == "Hello"            # "▁Hello": `Strip` drops a sequence's first space
    for context, expected in ((6, " Hello"), (1, " Hello"), (0, "Hello")):
        d = FinalDetokenizer(byte_fallback.decode, prompt, context=context)
        d.push(ids)
        assert d.flush() == expected == _streamed_with(byte_fallback.decode, prompt, ids, context)


def _streamed_with(decode, prompt: list[int], output: list[int], context: int) -> str:
    d = IncrementalDetokenizer(decode, prompt, context=context)
    return "".join(d.push([t]) for t in output) + d.flush()


@pytest.mark.parametrize("which", ["qwen3_tok", "byte_fallback"])
def test_cut_gives_what_the_stream_released(which, request):
    """`cut` (an output ended without its final flush): the stream's pushes, no flush."""
    tok = request.getfixturevalue(which)
    vocab = max(tok.added_tokens.values()) + 1 if which == "qwen3_tok" else tok.get_vocab_size()
    rng = random.Random(29)
    encode = tok.encode_plain if which == "qwen3_tok" else (lambda t: tok.encode(t, add_special_tokens=False).ids)
    cases = [(encode("Hi"), encode(" hi 😀 日")[:-1])]
    cases += [([rng.randrange(vocab) for _ in range(5)], [rng.randrange(vocab) for _ in range(20)]) for _ in range(50)]
    for prompt, output in cases:
        d, stream = FinalDetokenizer(tok.decode, prompt), IncrementalDetokenizer(tok.decode, prompt)
        d.push(output)
        assert d.cut() == "".join(stream.push([t]) for t in output)
        assert d.cut() == d.flush() == ""
    assert FinalDetokenizer(tok.decode, cases[0][0]).cut() == ""


def _brute_force(text: str, stops: list[str], include: bool = False) -> tuple[str, str | None]:
    """The stop string that completes first (earliest end; ties: longest), by exhaustive search."""
    hits = [(i + len(s), i, s) for s in stops for i in range(len(text)) if text.startswith(s, i)]
    if not hits:
        return text, None
    end, pos, stop = min(hits)
    return text[: end if include else pos], stop


def _push_all(matcher: StopStringMatcher, chunks: list[str], expected: str) -> str:
    released = ""
    for c in chunks:
        released += matcher.push(c)
        assert expected.startswith(released), f"released {released!r}, not a prefix of {expected!r}"
    return released + matcher.flush()


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet="abcXY\n", max_size=40),
    stops=st.lists(st.text(alphabet="abcXY\n", min_size=1, max_size=4), max_size=3),
    cuts=st.lists(st.integers(0, 40), max_size=6),
    include=st.booleans(),
)
def test_stop_matcher_equals_brute_force(text, stops, cuts, include):
    points = sorted({c % (len(text) + 1) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    expected, matched = _brute_force(text, stops, include)
    m = StopStringMatcher(stops, include_stop_str_in_output=include)
    assert (_push_all(m, chunks, expected), m.matched) == (expected, matched)


@pytest.mark.parametrize("include", [False, True])
@pytest.mark.parametrize("text,stops", [
    ("Hello world, the END is near", ["END"]),
    ("aaab then abab and abc", ["abc", "ab!"]),
    ("no stop string in here", ["STOP", "zz"]),
    ("overlap: xxy xxxy", ["xxxy", "xy"]),
    ("ends with a prefix of the stop: ST", ["STOP"]),
    ("abcd", ["abcd", "bc"]),
])
def test_stop_strings_at_every_split_position(text, stops, include):
    expected, matched = _brute_force(text, stops, include)
    splits = [[text[:i], text[i:]] for i in range(len(text) + 1)]
    splits += [list(text)] + [[text[i:j] for i, j in zip(cuts, cuts[1:])]
                              for cuts in ([0, 3, 4, 11, len(text)], [0, 1, 2, 5, 6, len(text)])]
    for chunks in splits:
        m = StopStringMatcher(stops, include_stop_str_in_output=include)
        assert _push_all(m, chunks, expected) == expected, chunks
        assert m.matched == matched
