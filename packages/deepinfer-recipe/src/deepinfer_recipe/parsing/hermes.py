# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Streaming parser for ``<tool_call>{json}</tool_call>`` tool calls (Qwen2.5 / Qwen3 family).

Shape (from the Qwen3 ``chat_template``)::

    <tool_call>
    {"name": "NAME", "arguments": {ARGS}}
    </tool_call>

When ``"name"`` comes first, the name is announced as soon as it is complete and the
arguments object is streamed as it arrives (holding back the outer closing brace);
otherwise the whole call is parsed when ``</tool_call>`` arrives.
"""

from __future__ import annotations

import json
import re

from deepinfer_recipe.events import Event, ParseIssue, ToolCallDelta, ToolCallEnd, ToolCallStart
from deepinfer_recipe.parsing.dialect_steps import Step, is_json_object, truncated
from deepinfer_recipe.parsing.markers import CallCounter, partial_suffix_len

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
_HEAD = re.compile(r'\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"arguments"\s*:\s*(?=\S)')
_TAIL = re.compile(r"\s*\}?\s*$")


class HermesToolParser:
    """Tool-call dialect for ``<tool_call>`` JSON blocks.

    Args:
        calls: Shared call counter (indices and ids).
    """

    resumes_content = True
    start_markers = (OPEN,)

    def __init__(self, calls: CallCounter) -> None:
        self.calls = calls
        self._state = "head"
        self._index = -1
        self._args = ""

    def begin(self, marker: str) -> None:
        """Enter one ``<tool_call>`` block."""
        self._state = "head"

    def step(self, buf: str) -> Step:
        """Consume a prefix of ``buf``; see :meth:`DsmlToolParser.step`."""
        if self._state == "head":
            return self._head(buf)
        return self._body(buf)

    def finish(self) -> list[Event]:
        """Close whatever is open at the end of the output (truncation)."""
        return truncated(self._index if self._state == "args" else None)

    def _head(self, buf: str) -> Step:
        match = _HEAD.match(buf)
        if match:
            try:
                name = json.loads(f'"{match.group(1)}"')
            except ValueError:
                name = ""
            if name:
                self._index, call_id = self.calls.new_call()
                self._args = ""
                self._state = "args"
                return match.end(), [ToolCallStart(self._index, call_id, name)], False
        pos = buf.find(CLOSE)
        if pos < 0:
            return 0, [], False
        return pos + len(CLOSE), self._whole(buf[:pos]), True

    def _whole(self, body: str) -> list[Event]:
        try:
            obj = json.loads(body)
            name = obj["name"]
            args = obj.get("arguments", {})
        except (ValueError, KeyError, TypeError):
            return [ParseIssue("malformed_tool_call", body)]
        if not isinstance(name, str) or not name:
            return [ParseIssue("malformed_tool_call", body)]
        text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        index, call_id = self.calls.new_call()
        ok = is_json_object(text)
        return [ToolCallStart(index, call_id, name), ToolCallDelta(index, text), ToolCallEnd(index, ok)]

    def _body(self, buf: str) -> Step:
        pos = buf.find(CLOSE)
        if pos >= 0:
            body = buf[:pos]
            cut = _TAIL.search(body).start()
            events: list[Event] = [ToolCallDelta(self._index, body[:cut])] if cut else []
            self._args += body[:cut]
            ok = "}" in body[cut:] and is_json_object(self._args)
            events.append(ToolCallEnd(self._index, ok=ok))
            if not ok:
                events.append(ParseIssue("malformed_tool_call", ""))
            self._state = "head"
            return pos + len(CLOSE), events, True
        ready = len(buf) - partial_suffix_len(buf, [CLOSE])
        ready = _TAIL.search(buf[:ready]).start()
        if ready == 0:
            return 0, [], False
        self._args += buf[:ready]
        return ready, [ToolCallDelta(self._index, buf[:ready])], False
