# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Small typed accessors for JSON request bodies; every failure names the field."""

from __future__ import annotations

import json

from deepinfer_recipe.errors import RequestError, field_error

_MISSING = object()


def load_body(body: bytes | str | dict) -> dict:
    """Decode a request body into a JSON object.

    Args:
        body: Raw bytes (must be UTF-8), a JSON string, or an already-parsed dict.

    Raises:
        RequestError: non-UTF-8 bytes, invalid JSON, or a non-object top level.
    """
    if isinstance(body, bytes):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError as err:
            raise RequestError(
                f"body: request body is not valid UTF-8 ({err.reason} at byte {err.start})", "body"
            ) from None
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError as err:
            raise RequestError(f"body: request body is not valid JSON ({err})", "body") from None
    if not isinstance(body, dict):
        raise RequestError("body: request body must be a JSON object", "body")
    return body


def get(obj: dict, key: str, types: type | tuple[type, ...], path: str, default=_MISSING):
    """``obj[key]`` checked against ``types``; ``default`` when absent or null.

    Args:
        obj: The JSON object.
        key: Field name.
        types: Accepted Python types (bool is never accepted as a number).
        path: Path of ``obj`` for error messages ("" for the top level).
        default: Value for a missing/null field; omitted = the field is required.

    Raises:
        RequestError: missing required field, or wrong type.
    """
    name = f"{path}.{key}" if path else key
    value = obj.get(key)
    if value is None:
        if default is _MISSING:
            raise field_error(name, "field is required")
        return default
    types = types if isinstance(types, tuple) else (types,)
    if isinstance(value, bool) and bool not in types:
        raise field_error(name, f"expected {_names(types)}, got boolean")
    if not isinstance(value, types):
        raise field_error(name, f"expected {_names(types)}, got {type(value).__name__}")
    return value


def non_empty_str(obj: dict, key: str, path: str) -> str:
    """A required string field that must not be empty (ids such as ``tool_call_id``).

    Raises:
        RequestError: missing, not a string, or empty.
    """
    value = get(obj, key, str, path)
    if not value:
        raise field_error(f"{path}.{key}" if path else key, "must be a non-empty string")
    return value


def number(obj: dict, key: str, path: str, lo: float, hi: float, default=None):
    """A number field within ``[lo, hi]`` (or ``default`` when absent)."""
    value = get(obj, key, (int, float), path, default)
    if value is not None and not lo <= value <= hi:
        name = f"{path}.{key}" if path else key
        raise field_error(name, f"must be between {lo} and {hi}, got {value}")
    return value


def positive_int(obj: dict, key: str, path: str, default=None):
    """An integer field >= 1 (or ``default`` when absent)."""
    value = get(obj, key, int, path, default)
    if value is not None and value < 1:
        name = f"{path}.{key}" if path else key
        raise field_error(name, f"must be >= 1, got {value}")
    return value


def stop_list(value, name: str, limit: int) -> tuple[str, ...]:
    """Normalise ``stop`` (string or list of strings, at most ``limit``)."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise field_error(name, "expected a string or a list of strings")
    if len(value) > limit:
        raise field_error(name, f"at most {limit} stop sequences are allowed, got {len(value)}")
    return tuple(s for s in value if s)


def json_object_text(value, name: str) -> str:
    """Tool-call arguments as JSON object text (accepts text or an object)."""
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    if not isinstance(value, str):
        raise field_error(name, "expected JSON object text")
    try:
        parsed = json.loads(value) if value.strip() else {}
    except ValueError:
        raise field_error(name, "is not valid JSON") from None
    if not isinstance(parsed, dict):
        raise field_error(name, "must encode a JSON object")
    return value if value.strip() else "{}"


def _names(types: tuple[type, ...]) -> str:
    names = {int: "integer", float: "number", str: "string", list: "array", dict: "object", bool: "boolean"}
    return " or ".join(names.get(t, t.__name__) for t in types)
