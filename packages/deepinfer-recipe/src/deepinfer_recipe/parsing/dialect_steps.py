# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Steps the tool-call dialects (DSML, DeepSeek V3, Hermes) take alike.

A dialect consumes its block one :data:`Step` at a time (see :meth:`DsmlToolParser.step`);
the helpers here build the steps that do not depend on the dialect's markup.
"""

from __future__ import annotations

import json

from deepinfer_recipe.events import Event, ParseIssue, ToolCallEnd
from deepinfer_recipe.parsing.markers import partial_suffix_len

# (consumed_chars, events, block_closed); (0, [], False) means "need more text".
Step = tuple[int, list[Event], bool]


def between_calls(buf: str, call_open: str, block_close: str) -> tuple[str, Step]:
    """One step between the calls of a block: the next call, the block's end, or neither.

    Whitespace before either marker is consumed with it.

    Args:
        buf: Unconsumed text.
        call_open: The marker that opens a call.
        block_close: The marker that closes the block.

    Returns:
        ``(outcome, step)``; ``outcome`` is ``call`` (``call_open`` consumed), ``close``
        (``block_close`` consumed, the step closes the block), ``wait`` (the text may still
        grow into a marker) or ``malformed`` (the step reports a ``malformed_tool_call``
        issue; the caller then skips to the block's end).
    """
    rest = buf.lstrip()
    ws = len(buf) - len(rest)
    if rest.startswith(call_open):
        return "call", (ws + len(call_open), [], False)
    if rest.startswith(block_close):
        return "close", (ws + len(block_close), [], True)
    if not rest or call_open.startswith(rest) or block_close.startswith(rest):
        return "wait", (ws, [], False)
    return "malformed", (ws, [ParseIssue("malformed_tool_call", "")], False)


def skip_past(buf: str, closer: str, closes_block: bool) -> tuple[bool, Step]:
    """Discard malformed markup up to and including ``closer``, reporting it as malformed.

    Text that may still grow into ``closer`` is held back.

    Args:
        buf: Unconsumed text.
        closer: The marker that ends the skipped span.
        closes_block: Whether ``closer`` ends the whole tool-call block.

    Returns:
        ``(found, step)``: ``found`` is True when ``closer`` was consumed.
    """
    pos = buf.find(closer)
    if pos >= 0:
        return True, (pos + len(closer), [ParseIssue("malformed_tool_call", buf[:pos])], closes_block)
    ready = len(buf) - partial_suffix_len(buf, [closer])
    if ready == 0:
        return False, (0, [], False)
    return False, (ready, [ParseIssue("malformed_tool_call", buf[:ready])], False)


def truncated(open_call: int | None) -> list[Event]:
    """Events for an output that ends inside a tool-call block.

    Args:
        open_call: Index of the call still open (it ends with ``ok=False``), or None.
    """
    events: list[Event] = [] if open_call is None else [ToolCallEnd(open_call, ok=False)]
    events.append(ParseIssue("truncated", ""))
    return events


def is_json_object(text: str) -> bool:
    """Whether ``text`` is valid JSON whose top level is an object (tool-call arguments)."""
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False
