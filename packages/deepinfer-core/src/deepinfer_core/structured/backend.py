# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""GuidanceBackend: StructuredOutputs -> compiled grammars and vocabulary bitmasks, via llguidance.

llguidance (MIT, no dependencies) was chosen over xgrammar on measured coverage, compile time
and mask cost (packages/deepinfer-core/BENCHMARKS.md, "Structured output"); it also rejects
JSON-schema keywords it cannot enforce instead of ignoring them. Only this file imports it.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import threading

import torch

from deepinfer_core.structured.params import StructuredOutputs

# Compact JSON: flexible whitespace lets small models pad outputs with newlines forever.
_JSON_OPTIONS = {"whitespace_flexible": False}
_UNIMPLEMENTED = re.compile(r"Unimplemented keys: (\[[^\]]*\])")
_QUOTED_SOURCE = re.compile(r"^\d+ \| ")             # a line of the grammar llguidance quotes
_SOURCE_POSITION = re.compile(r"^at \d+\(\d+\): ")   # its line(column) in that grammar


class CompiledGrammar:
    """A validated grammar: matchers in their start state ("templates") that requests copy.

    llguidance's `deep_copy` shares the copied matcher's lexer state (behind one lock) with the
    copy: measured on 64 copies of one template, filling masks with 2 threads was slower than
    with 1 (1.7 vs 2.2 ms a step), while independently built matchers scale but start cold. So
    the backend builds more independent templates in the background (`add_template`), a new
    request copies the least-loaded one, requests admitted before the templates existed are
    moved later (`move`), and `fill_bitmask` callers group rows by template so that each thread
    mostly works on one (4 templates, 2 threads: 1.8 -> 1.1 ms a step for the same 64
    rows; `benchmarks/structured_backends.py shards`).

    Attributes:
        key: the (kind, spec text) it was compiled from.
    """

    def __init__(self, key: tuple[str, str], template: object) -> None:
        self.key = key
        self._templates = [template]
        self._live = [0]   # live matchers per template
        self._lock = threading.Lock()

    @property
    def num_templates(self) -> int:
        return len(self._templates)

    def add_template(self, template: object) -> None:
        """Adds an independently built matcher in the start state."""
        with self._lock:
            self._templates.append(template)
            self._live.append(0)

    def new_matcher(self) -> tuple[object, int]:
        """A fresh matcher (an `llguidance.LLMatcher`) in the start state, copied from the
        least-loaded template, and that template's index."""
        with self._lock:
            shard = min(range(len(self._templates)), key=self._live.__getitem__)
            self._live[shard] += 1
            return self._templates[shard].deep_copy(), shard

    def release(self, shard: int) -> None:
        """A matcher of template `shard` is gone."""
        with self._lock:
            self._live[shard] -= 1

    def add_live(self, shard: int) -> None:
        """A matcher of template `shard` is back (undoes a `move`)."""
        with self._lock:
            self._live[shard] += 1

    @property
    def balanced(self) -> bool:
        """No template holds 2 or more live matchers than another (`move` would do nothing); a
        lock-free read, as a hint."""
        live = self._live
        return max(live) - min(live) < 2

    def move(self, shard: int) -> tuple[object, int] | None:
        """A start-state matcher of a template with at least 2 fewer live matchers than `shard`
        (the caller replays its tokens into it and drops its old matcher), or None when moving
        would not even out the load. Requests admitted together before the background templates
        existed all start on the first one; moves spread them."""
        with self._lock:
            target = min(range(len(self._templates)), key=self._live.__getitem__)
            if self._live[shard] - self._live[target] < 2:
                return None
            self._live[shard] -= 1
            self._live[target] += 1
            return self._templates[target].deep_copy(), target


class GuidanceBackend:
    """llguidance over one tokenizer and vocabulary.

    The llguidance tokenizer (about 0.5 s to build for a 49k vocabulary) is built on the first
    `compile`, from any thread.

    Args:
        tokenizer_json: the `tokenizers.Tokenizer` serialised with `to_str()`.
        vocab_size: V, the logits width (may exceed the tokenizer's size: padding rows).
        eos_token_id: the token allowed once the grammar accepts; None takes the tokenizer's.
        num_threads: threads for batch mask filling; None lets llguidance choose.
    """

    def __init__(self, tokenizer_json: str, vocab_size: int, eos_token_id: int | None,
                 num_threads: int | None = None) -> None:
        import llguidance

        self._ll = llguidance
        self._tokenizer_json = tokenizer_json
        self.vocab_size = vocab_size
        self.eos_token_id = eos_token_id
        self._num_threads = num_threads
        self._tokenizer = None
        self._executor = None
        self._lock = threading.Lock()
        # Builds the extra templates of each grammar (see CompiledGrammar) off the engine thread.
        self._builder = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="deepinfer-templates")

    @property
    def bitmask_width(self) -> int:
        """Int32 words per bitmask row: ceil(V / 32)."""
        return (self.vocab_size + 31) // 32

    def _ll_tokenizer(self) -> object:
        with self._lock:
            if self._tokenizer is None:
                eos = None if self.eos_token_id is None else [self.eos_token_id]
                self._tokenizer = self._ll.LLTokenizer(self._tokenizer_json, n_vocab=self.vocab_size, eos_token=eos)
            return self._tokenizer

    def compile(self, spec: StructuredOutputs) -> CompiledGrammar:
        """Translates and validates `spec` (thread safe; llguidance releases the GIL while building).

        Returns:
            The CompiledGrammar.

        Raises:
            ValueError: the backend cannot handle the spec; the message starts with the field
                name (`json_schema`, `regex`, ...) and names unsupported schema keywords.
        """
        kind, text = spec.key()
        ll = self._ll
        grammar = _grammar(ll, spec)
        tokenizer = self._ll_tokenizer()
        matcher = ll.LLMatcher(tokenizer, grammar, log_level=0)
        if not matcher.is_error():
            matcher.compute_bitmask()  # some empty languages (e.g. the regex `x[^\s\S]`) fail only here
        if matcher.is_error():
            raise ValueError(_error_message(kind, matcher.get_error()))
        compiled = CompiledGrammar((kind, text), matcher)
        if self.templates_per_grammar > 1:
            self._builder.submit(self._add_templates, compiled, tokenizer, grammar)
        return compiled

    @property
    def templates_per_grammar(self) -> int:
        """Independent templates per grammar: twice the fill threads, at most 32."""
        threads = self._num_threads or len(os.sched_getaffinity(0))
        return max(1, min(32, 2 * threads))

    def wait_for_templates(self) -> None:
        """Blocks until the background builder has built every template asked for so far."""
        self._builder.submit(lambda: None).result()

    def _add_templates(self, compiled: CompiledGrammar, tokenizer: object, grammar: object) -> None:
        while compiled.num_templates < self.templates_per_grammar:
            compiled.add_template(self._ll.LLMatcher(tokenizer, grammar, log_level=0))

    def fill_bitmask(self, rows: list[tuple[object, int]], bitmask: torch.Tensor) -> None:
        """Writes the next-token masks of several matchers, in parallel threads.

        Args:
            rows: (matcher, row) pairs; the matcher's mask goes to `bitmask[row]`.
            bitmask: [B, ceil(V / 32)] int32, contiguous, on the CPU; bit `t % 32` of word
                `t // 32` set = token t allowed (the layout `ops.apply_token_bitmask` reads).

        Raises:
            ValueError: `bitmask` has the wrong dtype, shape, layout or device.
        """
        if (bitmask.dtype != torch.int32 or bitmask.dim() != 2 or bitmask.shape[1] != self.bitmask_width
                or not bitmask.is_contiguous() or bitmask.device.type != "cpu"):
            raise ValueError(f"bitmask: need a contiguous CPU int32 [B, {self.bitmask_width}] tensor, got "
                             f"{bitmask.dtype} {tuple(bitmask.shape)} on {bitmask.device}")
        if rows:   # callers group rows by template: see CompiledGrammar
            self._parallel().unsafe_compute_mask_ptr(rows, bitmask.data_ptr(), self.bitmask_width * 4,
                                                     bitmask.shape[0])

    def consume(self, pairs: list[tuple[object, int]]) -> list[bool]:
        """Consumes one token per matcher, in parallel threads; False where the grammar rejected it."""
        return self._parallel().consume_token_par(pairs) if pairs else []

    def _parallel(self) -> object:
        if self._executor is None:
            self._executor = self._ll.LLExecutor(self._num_threads)
        return self._executor


def check_spec(spec: StructuredOutputs) -> None:
    """Translates and validates `spec` without a tokenizer (llguidance's
    `LLMatcher.validate_grammar`): what `GuidanceBackend.compile` would reject, short of what only
    the model's vocabulary can tell: a language that none of its token sequences can complete,
    and a grammar's references to special tokens (`<|name|>`, `<[id]>`) it lacks. Cheap (no
    model): front ends call it before loading one.

    Raises:
        ValueError: as the engine would report it (the message starts with the field name; a
            crash of the translation reads "<field>: grammar compilation failed: ...").
        ImportError: llguidance is not installed.
    """
    import llguidance

    try:
        grammar = _grammar(llguidance, spec)
        error = llguidance.LLMatcher.validate_grammar(grammar)
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - e.g. a schema value JSON cannot encode
        raise ValueError(f"{spec.kind}: grammar compilation failed: {type(exc).__name__}: {exc}") from None
    if error:
        raise ValueError(_error_message(spec.kind, error))


def _grammar(ll, spec: StructuredOutputs) -> str:
    """llguidance's grammar for `spec` (module `ll`); ValueError starting with the field name."""
    kind, text = spec.key()
    try:
        if kind == "json_schema":
            return ll.LLMatcher.grammar_from_json_schema(text, defaults=_JSON_OPTIONS)
        if kind == "json_object":
            return ll.LLMatcher.grammar_from_json_schema('{"type":"object"}', defaults=_JSON_OPTIONS)
        if kind == "regex":
            return ll.LLMatcher.grammar_from_regex(text)
        if kind == "grammar":
            return ll.grammar_from("grammar", text)  # Lark as is; GBNF/EBNF converted to Lark
        return ll.grammar_from("choice", list(spec.choice))
    except ValueError as exc:
        raise ValueError(f"{kind}: {one_line(str(exc))}") from None


def _error_message(kind: str, error: str) -> str:
    match = _UNIMPLEMENTED.search(error)
    if kind == "json_schema" and match:
        return f"json_schema: unsupported keyword(s) {match.group(1)}: the backend cannot enforce them ({error})"
    return f"{kind}: cannot compile: {one_line(error)}"


def one_line(error: str) -> str:
    """llguidance's message on one line, without the parser state dump that may follow it, the
    source lines it quotes (`  1 | start: ...`), their `^` markers, and the position in its own
    translation of the spec that starts it (`at 1(8): `: not a position in the user's text)."""
    lines = []
    for line in error.splitlines():
        stripped = line.strip()
        if stripped.startswith("<state>"):
            break
        if stripped and stripped != "^" and not _QUOTED_SOURCE.match(stripped):
            lines.append(stripped)
    text = _SOURCE_POSITION.sub("", " ".join(lines)) or "unknown error"
    if "NoExtensionBias" in text:
        text += " (no output can complete a match: the language is empty)"
    return text
