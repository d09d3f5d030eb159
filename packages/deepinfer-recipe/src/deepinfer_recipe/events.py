# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Events produced by the streaming output parsers, and their accumulation.

A parser turns raw model text into a sequence of these events. Protocol streamers turn
events into wire chunks; :class:`ParsedOutput` folds them into a final message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from deepinfer_recipe.conversation import ToolCall


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of chain-of-thought text."""

    text: str


@dataclass(frozen=True)
class ContentDelta:
    """A piece of answer text."""

    text: str


@dataclass(frozen=True)
class ToolCallStart:
    """A tool call began; its name is complete.

    Args:
        index: Ordinal of the call within the output (0, 1, ...).
        id: Call id given to the client.
        name: Function name.
    """

    index: int
    id: str
    name: str


@dataclass(frozen=True)
class ToolCallDelta:
    """A fragment of a call's JSON arguments; fragments concatenate to the full text."""

    index: int
    arguments: str


@dataclass(frozen=True)
class ToolCallEnd:
    """A tool call ended. ``ok`` is False when it was malformed or cut off."""

    index: int
    ok: bool = True


@dataclass(frozen=True)
class ParseIssue:
    """Text the parser refused to emit (stray markers, malformed calls, trailing text).

    Args:
        kind: Short machine name (``extra_end_of_thinking``, ``malformed_tool_call``,
            ``content_after_tool_calls``, ``truncated``).
        text: The text involved (may be empty).
    """

    kind: str
    text: str = ""


@dataclass(frozen=True)
class StopMatched:
    """A stop string matched in the answer; generation should end."""

    stop: str


Event = ReasoningDelta | ContentDelta | ToolCallStart | ToolCallDelta | ToolCallEnd | ParseIssue | StopMatched


def merge_events(events: list[Event]) -> list[Event]:
    """Coalesce neighbouring deltas of the same kind (and call index).

    Two parses of the same text chunked differently produce the same merged list.

    Args:
        events: Events in emission order.

    Returns:
        A new list where adjacent ReasoningDelta / ContentDelta / ToolCallDelta (same
        index) / ParseIssue (same kind) are joined, and empty deltas dropped.
    """
    out: list[Event] = []
    for ev in events:
        if isinstance(ev, (ReasoningDelta, ContentDelta)) and not ev.text:
            continue
        if isinstance(ev, ToolCallDelta) and not ev.arguments:
            continue
        prev = out[-1] if out else None
        if isinstance(ev, (ReasoningDelta, ContentDelta)) and type(prev) is type(ev):
            out[-1] = type(ev)(prev.text + ev.text)
        elif isinstance(ev, ToolCallDelta) and isinstance(prev, ToolCallDelta) and prev.index == ev.index:
            out[-1] = ToolCallDelta(ev.index, prev.arguments + ev.arguments)
        elif isinstance(ev, ParseIssue) and isinstance(prev, ParseIssue) and prev.kind == ev.kind:
            out[-1] = ParseIssue(ev.kind, prev.text + ev.text)
        else:
            out.append(ev)
    return out


@dataclass
class _OpenCall:
    id: str
    name: str
    arguments: str = ""
    ok: bool | None = None


@dataclass
class ParsedOutput:
    """Accumulates parser events into the final assistant message.

    Attributes:
        reasoning: All reasoning text.
        content: All answer text.
        calls: Every call seen, in index order (complete or not).
        issues: Parse issues, in order.
        stop: The stop string that ended the output, or None.
    """

    reasoning: str = ""
    content: str = ""
    calls: dict[int, _OpenCall] = field(default_factory=dict)
    issues: list[ParseIssue] = field(default_factory=list)
    stop: str | None = None

    def add(self, events: list[Event]) -> None:
        """Fold events into the accumulated state."""
        for ev in events:
            if isinstance(ev, ReasoningDelta):
                self.reasoning += ev.text
            elif isinstance(ev, ContentDelta):
                self.content += ev.text
            elif isinstance(ev, ToolCallStart):
                self.calls[ev.index] = _OpenCall(ev.id, ev.name)
            elif isinstance(ev, ToolCallDelta):
                self.calls[ev.index].arguments += ev.arguments
            elif isinstance(ev, ToolCallEnd):
                self.calls[ev.index].ok = ev.ok
            elif isinstance(ev, ParseIssue):
                self.issues.append(ev)
            elif isinstance(ev, StopMatched):
                self.stop = ev.stop

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Complete, well-formed calls (arguments parse as a JSON object), in order."""
        done = []
        for index in sorted(self.calls):
            call = self.calls[index]
            if call.ok and _is_json_object(call.arguments):
                done.append(ToolCall(call.id, call.name, call.arguments))
        return done

    @property
    def has_incomplete_calls(self) -> bool:
        """True when a call was started but not completed correctly."""
        return any(not (c.ok and _is_json_object(c.arguments)) for c in self.calls.values())


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False
