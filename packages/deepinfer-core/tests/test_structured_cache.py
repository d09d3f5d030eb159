# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""GrammarCache (compile once per key, in threads, with a timeout) and StructuredOutputs validation."""

from __future__ import annotations

import threading
import time

import pytest

from deepinfer_core import SamplingParams, StructuredOutputs
from deepinfer_core.structured.grammar_cache import GrammarCache


class CountingCompiler:
    """A stand-in compile function: records calls, can block, fails on regex "bad"."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.release = threading.Event()
        self.release.set()
        self.lock = threading.Lock()

    def __call__(self, spec: StructuredOutputs) -> str:
        with self.lock:
            self.calls.append(spec.key())
        self.release.wait()
        if spec.regex == "bad":
            raise ValueError("regex: cannot compile: unclosed group")
        if spec.regex == "crash":
            raise RuntimeError("backend bug")
        return f"grammar of {spec.key()}"


def test_each_key_compiles_once_even_when_submitted_concurrently() -> None:
    compiler = CountingCompiler()
    compiler.release.clear()
    cache = GrammarCache(compiler, max_workers=4)
    spec = StructuredOutputs(json_schema={"type": "object", "properties": {"b": {}, "a": {}}})
    same = StructuredOutputs(json_schema='{"type":"object","properties":{"b":{},"a":{}}}')
    futures = []
    threads = [threading.Thread(target=lambda s=s: futures.append(cache.submit(s))) for s in [spec, same] * 4]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    compiler.release.set()
    assert {f.result(timeout=5) for f in futures} == {f"grammar of {spec.key()}"}
    assert len(compiler.calls) == 1
    reordered = StructuredOutputs(json_schema={"type": "object", "properties": {"a": {}, "b": {}}})
    assert reordered.key() != spec.key()  # property order orders the output: a different grammar
    cache.close()


def test_errors_are_cached_and_name_the_field() -> None:
    compiler = CountingCompiler()
    cache = GrammarCache(compiler)
    for _ in range(2):
        with pytest.raises(ValueError, match="^regex: cannot compile"):
            cache.get(StructuredOutputs(regex="bad"), timeout_s=5)
    assert len(compiler.calls) == 1
    with pytest.raises(ValueError, match="^regex: grammar compilation failed: RuntimeError: backend bug"):
        cache.get(StructuredOutputs(regex="crash"), timeout_s=5)
    cache.close()


def test_timeout_names_the_field_and_the_compile_is_reused_later() -> None:
    compiler = CountingCompiler()
    compiler.release.clear()
    cache = GrammarCache(compiler)
    start = time.monotonic()
    with pytest.raises(ValueError, match=r"^choice: grammar compilation did not finish within 0\.05 s"):
        cache.get(StructuredOutputs(choice=["a", "b"]), timeout_s=0.05)
    assert time.monotonic() - start < 5
    compiler.release.set()
    assert cache.get(StructuredOutputs(choice=("a", "b")), timeout_s=5) == "grammar of ('choice', '[\"a\", \"b\"]')"
    assert len(compiler.calls) == 1
    cache.close()


def test_least_recently_used_entries_are_dropped() -> None:
    compiler = CountingCompiler()
    cache = GrammarCache(compiler, max_entries=2)
    a, b, c = (StructuredOutputs(regex=r) for r in ("a", "b", "c"))
    for spec in (a, b, a, c):  # b is the least recently used when c arrives
        cache.get(spec, timeout_s=5)
    assert len(cache) == 2
    cache.get(a, timeout_s=5)
    cache.get(b, timeout_s=5)
    assert compiler.calls.count(a.key()) == 1 and compiler.calls.count(b.key()) == 2
    cache.close()


@pytest.mark.parametrize("value,message", [
    ({}, "exactly one of"),
    ({"regex": "a", "choice": ["a"]}, r"exactly one of .*\['regex', 'choice'\]"),
    ({"regex": ""}, r"structured_outputs\.regex must be a non-empty str"),
    ({"grammar": 3}, r"structured_outputs\.grammar must be a non-empty str"),
    ({"choice": ["a", ""]}, r"structured_outputs\.choice must be a non-empty list"),
    ({"choice": "ab"}, r"structured_outputs\.choice must be a non-empty list"),
    ({"json_schema": "[1]"}, r"structured_outputs\.json_schema must be a JSON object"),
    ({"json_schema": "{"}, r"structured_outputs\.json_schema is not valid JSON"),
    ({"json_object": "yes"}, r"structured_outputs\.json_object must be True"),
    ({"jsonschema": {}}, r"unknown field\(s\) \['jsonschema'\]"),
    ("regex", "must be a StructuredOutputs or a dict"),
])
def test_bad_specs_name_the_field(value, message) -> None:
    with pytest.raises(ValueError, match=message):
        SamplingParams(structured_outputs=value)


def test_dict_and_dataclass_forms_agree() -> None:
    params = SamplingParams(structured_outputs={"choice": ["x", "y"]})
    assert params.structured_outputs == StructuredOutputs(choice=("x", "y"))
    assert params.structured_outputs.kind == "choice"
    assert SamplingParams(structured_outputs=StructuredOutputs(json_object=True)).structured_outputs.key() == (
        "json_object", "")
