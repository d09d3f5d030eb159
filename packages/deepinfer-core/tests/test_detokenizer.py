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
from deepinfer_core.sampling_params import SamplingParams

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


def _run_processor(tok: Tokenizer, prompts: list[list[int]], steps: list[list[tuple[list[int], str | None]]],
                   params: SamplingParams, fail_at: int | None = None) -> list:
    """Feeds each request's steps (new ids, finish reason) to each of its `params.n` children
    through one OutputProcessor; the first child of request `fail_at` (if any) fails in the engine
    at its last step instead of finishing (its siblings are then failed too)."""
    from deepinfer_core.engine.engine_core import EngineCoreOutput
    from deepinfer_core.engine.output_processor import OutputProcessor
    from deepinfer_core.sampling.logprobs import TokenLogprobs

    processor = OutputProcessor(tok)
    states = [processor.add(str(i), None, p, params, [f"{i}-{j}" for j in range(params.n)])
              for i, p in enumerate(prompts)]
    rng = random.Random(5)
    for k in range(max(len(s) for s in steps)):
        outs = []
        for i, request_steps in enumerate(steps):
            if k >= len(request_steps):
                continue
            ids, finish = request_steps[k]
            for j in range(params.n):
                lps = None if params.logprobs is None else [
                    TokenLogprobs([t, rng.randrange(100)], [-rng.random() * 3, -rng.random()], [2, 1]) for t in ids]
                error = "engine failed" if (i, j) == (fail_at, 0) and finish is not None else None
                outs.append(EngineCoreOutput(f"{i}-{j}", ids, new_logprobs=lps, error=error,
                                             finish_reason="error" if error else finish,
                                             stop_reason=7 if finish == "stop" else None))
        processor.process(outs)
    return [s.to_output() for s in states]


@pytest.mark.parametrize("logprobs,n", [(None, 1), (1, 1), (None, 2)])
def test_text_held_to_the_end_equals_the_streamed_text(smollm2: Tokenizer, logprobs, n) -> None:
    """Without stop strings a completion is detokenized once at its end (`FinalDetokenizer`);
    with one that never matches, token by token: every output field must agree, also for
    multi-token steps (speculative decoding), special tokens, random ids, a stop token, and a
    request failing mid-character (the stream holds the incomplete character back)."""
    vocab = smollm2.get_vocab_size()
    rng = random.Random(11)
    prompts = [smollm2.encode(t).ids for t in TEXTS] + [[rng.randrange(vocab) for _ in range(5)] for _ in range(20)]
    steps = []
    for i, _ in enumerate(prompts):
        ids = (smollm2.encode(" " + TEXTS[i % len(TEXTS)], add_special_tokens=False).ids if i % 2 else
               [rng.choice([0, 1, 2]) if rng.random() < 0.1 else rng.randrange(vocab) for _ in range(30)])
        if i == 3:   # ends inside its last character (the failing request below)
            ids = smollm2.encode(" hi 😀", add_special_tokens=False).ids[:-1]
            assert smollm2.decode(ids).endswith("\ufffd")
        cuts = sorted(rng.sample(range(1, len(ids)), min(4, len(ids) - 1)))
        chunks = [ids[a:b] for a, b in zip([0, *cuts], [*cuts, len(ids)])] + [[]]
        steps.append([(c, None) for c in chunks[:-1]] + [(chunks[-1], "stop" if i % 3 == 0 else "length")])
    for fail_at in (None, 3):
        held = _run_processor(smollm2, prompts, steps, SamplingParams(n=n, logprobs=logprobs), fail_at)
        streamed = _run_processor(smollm2, prompts, steps,
                                  SamplingParams(n=n, logprobs=logprobs, stop=["\x00never"]), fail_at)
        assert [o.outputs for o in held] == [o.outputs for o in streamed]
        assert [(o.error, o.finished, o.metrics.num_generated_tokens) for o in held] == \
            [(o.error, o.finished, o.metrics.num_generated_tokens) for o in streamed]
        assert sum(bool(o.outputs[0].text) for o in held) >= 20
        assert {o.outputs[0].stop_reason for o in held if o.error is None} == {None, 7}
        if fail_at is not None:
            failed = held[fail_at]
            assert failed.error == "engine failed" and [c.text for c in failed.outputs] == [" hi"] * n
