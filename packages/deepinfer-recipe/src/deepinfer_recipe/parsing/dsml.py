# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Streaming parser for DSML tool calls (DeepSeek V3.2, V4, V4.1).

Shape (V4 spelling; V3.2 names the block ``function_calls``, V4.1 puts a space before
each tag name)::

    <｜DSML｜tool_calls>
    <｜DSML｜invoke name="NAME">
    <｜DSML｜parameter name="KEY" string="true">raw text</｜DSML｜parameter>
    <｜DSML｜parameter name="KEY2" string="false">JSON value</｜DSML｜parameter>
    </｜DSML｜invoke>
    </｜DSML｜tool_calls>

Arguments are converted to JSON on the fly (format described in the DeepSeek V3.2/V4
release encoders, ``encoding_dsv32.py`` / ``encoding_dsv4.py``): ``string="true"``
values are JSON-escaped and streamed as they arrive; ``string="false"`` values are held
until their closing tag, validated with ``json.loads`` and then emitted, so every emitted
fragment keeps the arguments a prefix of valid JSON. Malformed markup fails closed: the
call ends with ``ok=False`` and a ``malformed_tool_call`` issue; no markup reaches content.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from deepinfer_recipe.events import Event, ParseIssue, ToolCallDelta, ToolCallEnd, ToolCallStart
from deepinfer_recipe.parsing.dialect_steps import Step, between_calls, skip_past, truncated
from deepinfer_recipe.parsing.markers import CallCounter, json_escape, partial_suffix_len

DSML = "｜DSML｜"


@dataclass(frozen=True)
class DsmlSpelling:
    """Tag names of one DSML generation.

    Args:
        block: Name of the wrapping block (``function_calls``, ``tool_calls``, `` calls``).
        invoke: Name of the call tag (``invoke`` or `` invoke``).
        parameter: Name of the parameter tag (``parameter`` or `` parameter``).
    """

    block: str
    invoke: str = "invoke"
    parameter: str = "parameter"

    @property
    def open_block(self) -> str:
        return f"<{DSML}{self.block}>"

    @property
    def close_block(self) -> str:
        return f"</{DSML}{self.block}>"

    @property
    def open_invoke(self) -> str:
        return f'<{DSML}{self.invoke} name="'

    @property
    def close_invoke(self) -> str:
        return f"</{DSML}{self.invoke}>"

    @property
    def open_param(self) -> str:
        return f'<{DSML}{self.parameter} name="'

    @property
    def close_param(self) -> str:
        return f"</{DSML}{self.parameter}>"


DSML_V32 = DsmlSpelling("function_calls")
DSML_V4 = DsmlSpelling("tool_calls")
DSML_V41 = DsmlSpelling(" calls", " invoke", " parameter")

_STRING_TRUE = ' string="true">'
_STRING_FALSE = ' string="false">'
_MAX_NAME = 256


class DsmlToolParser:
    """Tool-call dialect for DSML blocks (used by :class:`OutputParser`).

    Args:
        spelling: Which DSML generation to recognise.
        calls: Shared call counter (indices and ids).
    """

    resumes_content = False

    def __init__(self, spelling: DsmlSpelling, calls: CallCounter) -> None:
        self.s = spelling
        self.calls = calls
        self.start_markers = (spelling.open_block,)
        self._state = "block"
        self._index = -1
        self._keys: set[str] = set()
        self._raw = ""
        self._handlers = {
            "block": self._block,
            "skip_block": self._skip_block,
            "name": self._name,
            "args": self._args,
            "skip_invoke": self._skip_invoke,
            "pname": self._pname,
            "ptype": self._ptype,
            "pstr": self._pstr,
            "praw": self._praw,
        }

    def begin(self, marker: str) -> None:
        """Enter a tool-call block (``marker`` is the opening tag just consumed)."""
        self._state = "block"

    def step(self, buf: str) -> Step:
        """Consume a prefix of ``buf``.

        Returns:
            ``(consumed_chars, events, block_closed)``; ``(0, [], False)`` means "need more text".
        """
        return self._handlers[self._state](buf)

    def finish(self) -> list[Event]:
        """Close whatever is open at the end of the output (truncation)."""
        call_open = self._state in ("args", "pname", "ptype", "pstr", "praw")
        return truncated(self._index if call_open else None)

    # -- block level -------------------------------------------------------------------
    def _block(self, buf: str) -> Step:
        outcome, step = between_calls(buf, self.s.open_invoke, self.s.close_block)
        if outcome == "call":
            self._state = "name"
        elif outcome == "malformed":
            self._state = "skip_block"
        return step

    def _skip_block(self, buf: str) -> Step:
        found, step = skip_past(buf, self.s.close_block, closes_block=True)
        if found:
            self._state = "block"
        return step

    # -- one invoke --------------------------------------------------------------------
    def _name(self, buf: str) -> Step:
        quote = buf.find('"')
        if quote < 0:
            if len(buf) > _MAX_NAME or "<" in buf or "\n" in buf:
                self._state = "skip_invoke"
                return 0, [ParseIssue("malformed_tool_call", "")], False
            return 0, [], False
        if len(buf) < quote + 2:
            return 0, [], False
        name = buf[:quote]
        if not name or "<" in name or "\n" in name or buf[quote + 1] != ">":
            self._state = "skip_invoke"
            return 0, [ParseIssue("malformed_tool_call", "")], False
        self._index, call_id = self.calls.new_call()
        self._keys = set()
        self._state = "args"
        return quote + 2, [ToolCallStart(self._index, call_id, name)], False

    def _args(self, buf: str) -> Step:
        rest = buf.lstrip()
        ws = len(buf) - len(rest)
        if rest.startswith(self.s.open_param):
            self._state = "pname"
            return ws + len(self.s.open_param), [], False
        if rest.startswith(self.s.close_invoke):
            self._state = "block"
            close = "}" if self._keys else "{}"
            events = [ToolCallDelta(self._index, close), ToolCallEnd(self._index, ok=True)]
            return ws + len(self.s.close_invoke), events, False
        if not rest or self.s.open_param.startswith(rest) or self.s.close_invoke.startswith(rest):
            return ws, [], False
        return ws, self._fail(), False

    def _fail(self) -> list[Event]:
        self._state = "skip_invoke"
        return [ToolCallEnd(self._index, ok=False), ParseIssue("malformed_tool_call", "")]

    def _skip_invoke(self, buf: str) -> Step:
        found, step = skip_past(buf, self.s.close_invoke, closes_block=False)
        if found:
            self._state = "block"
        return step

    # -- one parameter -----------------------------------------------------------------
    def _pname(self, buf: str) -> Step:
        quote = buf.find('"')
        if quote < 0:
            if len(buf) > _MAX_NAME or "<" in buf:
                return 0, self._fail(), False
            return 0, [], False
        key = buf[:quote]
        if key in self._keys or "<" in key:
            return 0, self._fail(), False
        lead = ", " if self._keys else "{"
        self._keys.add(key)
        self._state = "ptype"
        return quote + 1, [ToolCallDelta(self._index, f'{lead}"{json_escape(key)}": ')], False

    def _ptype(self, buf: str) -> Step:
        if buf.startswith(_STRING_TRUE):
            self._state = "pstr"
            return len(_STRING_TRUE), [ToolCallDelta(self._index, '"')], False
        if buf.startswith(_STRING_FALSE):
            self._state = "praw"
            self._raw = ""
            return len(_STRING_FALSE), [], False
        if _STRING_TRUE.startswith(buf) or _STRING_FALSE.startswith(buf):
            return 0, [], False
        return 0, self._fail(), False

    def _pstr(self, buf: str) -> Step:
        pos = buf.find(self.s.close_param)
        if pos >= 0:
            self._state = "args"
            text = json_escape(buf[:pos]) + '"'
            return pos + len(self.s.close_param), [ToolCallDelta(self._index, text)], False
        ready = len(buf) - partial_suffix_len(buf, [self.s.close_param])
        if ready == 0:
            return 0, [], False
        return ready, [ToolCallDelta(self._index, json_escape(buf[:ready]))], False

    def _praw(self, buf: str) -> Step:
        pos = buf.find(self.s.close_param)
        if pos < 0:
            ready = len(buf) - partial_suffix_len(buf, [self.s.close_param])
            self._raw += buf[:ready]
            return ready, [], False
        value = self._raw + buf[:pos]
        self._raw = ""
        try:
            json.loads(value)
        except ValueError:
            return pos + len(self.s.close_param), self._fail(), False
        self._state = "args"
        return pos + len(self.s.close_param), [ToolCallDelta(self._index, value)], False
