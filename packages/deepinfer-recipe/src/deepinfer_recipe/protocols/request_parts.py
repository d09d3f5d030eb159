# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Request parts that Chat Completions, Responses and Messages read the same way.

Each protocol spells its tools and its tool choice differently on the wire; what they share
is read here: the ``tools`` array, a tool's name / description / schema fields, the
``tool_choice`` modes, the check that a named choice names a declared tool, and the
:class:`Conversation` built from the parsed turns.
"""

from __future__ import annotations

from collections.abc import Callable

from deepinfer_recipe.conversation import Conversation, Message, ToolSpec
from deepinfer_recipe.errors import RequestError, field_error
from deepinfer_recipe.protocols import fields as F
from deepinfer_recipe.request import ToolChoice

_MODES = ("auto", "none", "required")


def tool_list(raw, read_tool: Callable[[object, str], ToolSpec]) -> tuple[ToolSpec, ...]:
    """The request's ``tools`` array.

    Args:
        raw: The ``tools`` field (None when absent).
        read_tool: ``(entry, path) -> ToolSpec`` for one entry; ``path`` is ``tools[i]``.

    Raises:
        RequestError: ``tools`` is not an array, or whatever ``read_tool`` raises.
    """
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise field_error("tools", "expected an array")
    return tuple(read_tool(tool, f"tools[{i}]") for i, tool in enumerate(raw))


def tool_spec(obj: dict, path: str, schema_key: str = "parameters", schema_required: bool = False) -> ToolSpec:
    """A tool's ``name``, ``description`` and JSON-schema fields read from ``obj``.

    Args:
        obj: The object holding the fields.
        path: Path of ``obj`` for error messages.
        schema_key: Name of the schema field (``parameters``, or ``input_schema`` in Messages).
        schema_required: False: an absent schema means no parameters.

    Raises:
        RequestError: a missing name (or required schema), or a field of the wrong type.
    """
    name = F.get(obj, "name", str, path)
    description = F.get(obj, "description", str, path, "")
    if schema_required:
        schema = F.get(obj, schema_key, dict, path)
    else:
        schema = F.get(obj, schema_key, dict, path, {"type": "object", "properties": {}})
    return ToolSpec(name, description, schema)


def tool_choice_mode(raw: str | None, tools: tuple[ToolSpec, ...]) -> ToolChoice:
    """``tool_choice`` given as a mode: absent (``auto`` with tools, else ``none``) or a string.

    Raises:
        RequestError: a string other than ``auto``, ``none`` or ``required``.
    """
    if raw is None:
        return ToolChoice("auto" if tools else "none")
    if raw not in _MODES:
        raise field_error("tool_choice", f"unknown value {raw!r}")
    return ToolChoice(raw)


def named_tool_choice(name: str, tools: tuple[ToolSpec, ...], path: str) -> ToolChoice:
    """A ``named`` tool choice, checked against the declared tools.

    Args:
        name: The tool the request names.
        tools: The request's tools.
        path: Path of the name field for the error message (``tool_choice.name``, ...).

    Raises:
        RequestError: no declared tool has that name.
    """
    if name not in {t.name for t in tools}:
        raise field_error(path, f"no tool named {name!r}")
    return ToolChoice("named", name)


def conversation(field: str, messages: list[Message], tools: tuple[ToolSpec, ...], **settings) -> Conversation:
    """The :class:`Conversation` of the parsed turns, its ValueError reported on ``field``.

    Args:
        field: The request field the turns came from (``messages`` or ``input``).
        messages: The parsed turns.
        tools: The parsed tools.
        **settings: ``thinking``, ``reasoning_effort``, ``response_format`` (see Conversation).

    Raises:
        RequestError: the turns do not form a conversation (e.g. a tool result that answers
            no earlier call), with ``field`` as its param.
    """
    try:
        return Conversation(tuple(messages), tools, **settings)
    except ValueError as err:
        raise RequestError(f"{field}: {err}", field) from None
