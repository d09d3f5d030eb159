# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Streaming parser for DeepSeek V3 / R1 and V3.1 tool calls.

V3 / R1 (``fenced=True``)::

    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
    ```json
    {ARGS}
    ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>

V3.1 (``fenced=False``)::

    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{ARGS}<｜tool▁call▁end｜><｜tool▁calls▁end｜>

(formats from the DeepSeek-V3 / V3.1 ``chat_template``). Arguments are the model's JSON
text, streamed as it arrives (minus the code fence) and validated when the call closes;
invalid JSON ends the call with ``ok=False``.
"""

from __future__ import annotations

import re

from deepinfer_recipe.events import Event, ParseIssue, ToolCallDelta, ToolCallEnd, ToolCallStart
from deepinfer_recipe.parsing.dialect_steps import Step, between_calls, is_json_object, skip_past, truncated
from deepinfer_recipe.parsing.markers import CallCounter, partial_suffix_len

CALLS_BEGIN = "<｜tool▁calls▁begin｜>"
CALLS_END = "<｜tool▁calls▁end｜>"
CALL_BEGIN = "<｜tool▁call▁begin｜>"
CALL_END = "<｜tool▁call▁end｜>"
SEP = "<｜tool▁sep｜>"
_FENCE_OPEN = "```json\n"
_FENCE_TAIL = re.compile(r"\s*`{0,3}\s*$")
_MAX_HEAD = 256


class DeepSeekV3ToolParser:
    """Tool-call dialect for ``<｜tool▁calls▁begin｜>`` blocks.

    Args:
        calls: Shared call counter (indices and ids).
        fenced: True for V3/R1 (type, name on its own line, JSON in a code fence);
            False for V3.1 (``NAME<｜tool▁sep｜>ARGS``).
    """

    resumes_content = False
    start_markers = (CALLS_BEGIN, CALL_BEGIN)

    def __init__(self, calls: CallCounter, fenced: bool) -> None:
        self.calls = calls
        self.fenced = fenced
        self._state = "block"
        self._index = -1
        self._args = ""
        self._handlers = {
            "block": self._block,
            "skip": self._skip,
            "head": self._head,
            "name": self._name,
            "fence": self._fence,
            "args": self._args_step,
        }

    def begin(self, marker: str) -> None:
        """Enter the block; a bare ``<｜tool▁call▁begin｜>`` opens a call directly."""
        self._state = "head" if marker == CALL_BEGIN else "block"

    def step(self, buf: str) -> Step:
        """Consume a prefix of ``buf``; see :meth:`DsmlToolParser.step`."""
        return self._handlers[self._state](buf)

    def finish(self) -> list[Event]:
        """Close whatever is open at the end of the output (truncation)."""
        return truncated(self._index if self._state in ("fence", "args") else None)

    def _block(self, buf: str) -> Step:
        outcome, step = between_calls(buf, CALL_BEGIN, CALLS_END)
        if outcome == "call":
            self._state = "head"
        elif outcome == "malformed":
            self._state = "skip"
        return step

    def _skip(self, buf: str) -> Step:
        return skip_past(buf, CALLS_END, closes_block=True)[1]

    def _head(self, buf: str) -> Step:
        pos = buf.find(SEP)
        head = buf[:pos] if pos >= 0 else buf[: len(buf) - partial_suffix_len(buf, [SEP])]
        if len(head) > _MAX_HEAD or "<｜" in head:
            self._state = "skip"
            return 0, [ParseIssue("malformed_tool_call", "")], False
        if pos < 0:
            return 0, [], False
        if self.fenced:
            self._state = "name"
            return pos + len(SEP), [], False
        return pos + len(SEP), self._start(buf[:pos].strip()), False

    def _name(self, buf: str) -> Step:
        pos = buf.find("\n")
        head = buf[:pos] if pos >= 0 else buf
        if len(head) > _MAX_HEAD or "<" in head:
            self._state = "skip"
            return 0, [ParseIssue("malformed_tool_call", "")], False
        if pos < 0:
            return 0, [], False
        events = self._start(head.strip())
        if self._state == "args":
            self._state = "fence"
        return pos + 1, events, False

    def _start(self, name: str) -> list[Event]:
        if not name or "<" in name:
            self._state = "skip"
            return [ParseIssue("malformed_tool_call", name)]
        self._index, call_id = self.calls.new_call()
        self._args = ""
        self._state = "args"
        return [ToolCallStart(self._index, call_id, name)]

    def _fence(self, buf: str) -> Step:
        if buf.startswith(_FENCE_OPEN):
            self._state = "args"
            return len(_FENCE_OPEN), [], False
        if _FENCE_OPEN.startswith(buf):
            return 0, [], False
        self._state = "args"  # lenient: JSON without a fence
        return 0, [], False

    def _args_step(self, buf: str) -> Step:
        pos = buf.find(CALL_END)
        if pos >= 0:
            text = buf[:pos]
            if self.fenced:
                text = text[: _FENCE_TAIL.search(text).start()]
            self._args += text
            self._state = "block"
            events: list[Event] = [ToolCallDelta(self._index, text)] if text else []
            events.append(ToolCallEnd(self._index, ok=is_json_object(self._args)))
            return pos + len(CALL_END), events, False
        ready = len(buf) - partial_suffix_len(buf, [CALL_END])
        if self.fenced:
            ready = _FENCE_TAIL.search(buf[:ready]).start()
        if ready == 0:
            return 0, [], False
        self._args += buf[:ready]
        return ready, [ToolCallDelta(self._index, buf[:ready])], False
