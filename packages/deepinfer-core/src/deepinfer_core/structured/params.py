# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""StructuredOutputs: what one request's output must match (a JSON schema, a regex, a grammar...)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

KINDS = ("json_schema", "json_object", "regex", "grammar", "choice")


@dataclasses.dataclass(frozen=True)
class StructuredOutputs:
    """The constraint on a request's output text; exactly one field is set.

    The engine masks every token that cannot continue a match, and allows EOS only once the
    text so far is a complete match. JSON is produced compactly (no whitespace between tokens
    of the JSON syntax; `"x-guidance"` options inside a schema may change that).

    Attributes:
        json_schema: a JSON Schema (dict, or its JSON text). Keywords the backend cannot
            enforce (e.g. `uniqueItems`) are rejected with an error naming them, never ignored.
        json_object: True: any JSON object (OpenAI `response_format={"type": "json_object"}`).
        regex: the output must fully match this regular expression (Rust `regex` syntax, which
            covers the common Python syntax; no look-around or back-references).
        grammar: a context-free grammar in Lark syntax (a rule `start: ...`) or GBNF/EBNF
            (llama.cpp syntax, a rule `root ::= ...`).
        choice: the output is exactly one of these strings.

    Raises:
        ValueError: not exactly one field set, or a field of the wrong type; the message names
            the field, e.g. "structured_outputs.regex must be a non-empty str, got 3".
    """

    json_schema: dict[str, Any] | str | None = None
    json_object: bool | None = None
    regex: str | None = None
    grammar: str | None = None
    choice: list[str] | tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        given = [k for k in KINDS if getattr(self, k) not in (None, False)]
        if len(given) != 1:
            raise ValueError(f"structured_outputs must set exactly one of {', '.join(KINDS)}, got "
                             f"{given or 'none'}")
        kind = given[0]
        value = getattr(self, kind)
        if kind == "json_schema":
            _check_schema(value)
        elif kind == "json_object":
            _require(value is True, "json_object must be True or None", value)
        elif kind in ("regex", "grammar"):
            _require(isinstance(value, str) and value != "", f"{kind} must be a non-empty str", value)
        else:
            _require(isinstance(value, (list, tuple)) and len(value) > 0
                     and all(isinstance(c, str) and c != "" for c in value),
                     "choice must be a non-empty list of non-empty strs", value)
            object.__setattr__(self, "choice", tuple(value))

    @classmethod
    def from_value(cls, value: StructuredOutputs | dict[str, Any]) -> StructuredOutputs:
        """Accepts a StructuredOutputs or a dict of its fields (e.g. `{"regex": "[0-9]+"}`).

        Raises:
            ValueError: neither, an unknown key, or an invalid value (names the field).
        """
        if isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            raise ValueError(f"structured_outputs must be a StructuredOutputs or a dict, got {type(value).__name__}")
        unknown = sorted(set(value) - set(KINDS))
        if unknown:
            raise ValueError(f"structured_outputs: unknown field(s) {unknown}; expected one of {', '.join(KINDS)}")
        return cls(**value)

    def check(self) -> None:
        """Compiles the constraint without a model (`backend.check_spec`, llguidance): a regex,
        grammar or schema the engine would reject raises here, before a model is loaded. Only the
        engine finds what needs the model's vocabulary: a language its tokens cannot complete, and
        a grammar's references to special tokens it lacks.

        Raises:
            ValueError: the message starts with the field name, e.g. "regex: ... unclosed group".
            ImportError: llguidance is not installed.
        """
        from deepinfer_core.structured.backend import check_spec

        check_spec(self)

    @property
    def kind(self) -> str:
        """The field that is set: one of `KINDS`."""
        return next(k for k in KINDS if getattr(self, k) not in (None, False))

    def key(self) -> tuple[str, str]:
        """(kind, spec text): the grammar-cache key. Key order of a schema is kept (it orders output)."""
        kind = self.kind
        value = getattr(self, kind)
        if kind == "json_schema" and not isinstance(value, str):
            return kind, json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        if kind == "json_object":
            return kind, ""
        if kind == "choice":
            return kind, json.dumps(list(value), ensure_ascii=False)
        return kind, value


def _check_schema(value: object) -> None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"structured_outputs.json_schema is not valid JSON: {exc.msg} at {exc.pos}") from None
    _require(isinstance(value, dict), "json_schema must be a JSON object (a dict or its JSON text)",
             type(value).__name__)
    try:   # the grammar cache keys it by its JSON text: a value JSON cannot encode fails here, named
        json.dumps(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"structured_outputs.json_schema is not JSON-encodable: {type(exc).__name__}: "
                         f"{str(exc)[:120]}") from None


def _require(ok: bool, message: str, value: object) -> None:
    if not ok:
        raise ValueError(f"structured_outputs.{message}, got {value!r}")
