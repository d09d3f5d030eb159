# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The streaming output parser: raw model text in, reasoning / content / tool-call events out.

One state machine serves every model family; the family decides where the output starts
(inside reasoning or not), which tool-call dialect is active, and which strings end it.

Stages and what they watch (``\\n*`` = newlines right before the marker are swallowed):

=============  ===========================================================================
detect         a leading ``<think>`` (after whitespace) -> reasoning, else -> content
reasoning      ``\\n*</think>`` -> content; ``\\n*<tool start>`` -> tools (calls inside
               thinking are honoured); end markers -> done
content        ``\\n*<tool start>`` -> tools; stop strings -> done (StopMatched); a stray
               ``</think>`` is dropped and reported; end markers -> done
tools          the dialect consumes the block; when it closes -> content (Hermes) or
               after_tools (DeepSeek: any further text is reported, never emitted)
=============  ===========================================================================

Latency: only the longest tail that may still become a marker is held back, so the same
final events come out however the text is chunked (property tested).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from deepinfer_recipe.events import ContentDelta, Event, ParseIssue, ReasoningDelta, StopMatched
from deepinfer_recipe.parsing.deepseek_v3 import DeepSeekV3ToolParser
from deepinfer_recipe.parsing.dsml import DSML_V4, DSML_V32, DSML_V41, DsmlToolParser
from deepinfer_recipe.parsing.hermes import HermesToolParser
from deepinfer_recipe.parsing.markers import CallCounter, find_earliest, partial_suffix_len

THINK_START = "<think>"
THINK_END = "</think>"
REASONING_MODES = ("off", "on", "detect")
TOOL_DIALECTS = ("dsml_v32", "dsml_v4", "dsml_v41", "deepseek_v3", "deepseek_v31", "hermes")


@dataclass(frozen=True)
class ParserConfig:
    """What one model family's output looks like.

    Args:
        reasoning: ``off`` (answer only), ``on`` (output starts inside reasoning: the
            prompt ended with ``<think>``), ``detect`` (a leading ``<think>`` opens reasoning).
        tools: Tool-call dialect (one of TOOL_DIALECTS) or None to treat markup as text.
        stop: Stop strings, matched in the answer only (not in reasoning or tool markup).
        end_markers: Strings that end the output silently (e.g. the EOS token text).

    Raises:
        ValueError: unknown ``reasoning`` or ``tools`` value, or a non-string stop.
    """

    reasoning: str = "off"
    tools: str | None = None
    stop: tuple[str, ...] = ()
    end_markers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.reasoning not in REASONING_MODES:
            raise ValueError(f"reasoning: {self.reasoning!r} not in {REASONING_MODES}")
        if self.tools is not None and self.tools not in TOOL_DIALECTS:
            raise ValueError(f"tools: {self.tools!r} not in {TOOL_DIALECTS}")
        if any(not isinstance(s, str) for s in self.stop):
            raise ValueError("stop: every stop sequence must be a string")
        object.__setattr__(self, "stop", tuple(s for s in self.stop if s))


def _make_dialect(name: str | None, calls: CallCounter):
    if name is None:
        return None
    if name == "hermes":
        return HermesToolParser(calls)
    if name in ("deepseek_v3", "deepseek_v31"):
        return DeepSeekV3ToolParser(calls, fenced=name == "deepseek_v3")
    spelling = {"dsml_v32": DSML_V32, "dsml_v4": DSML_V4, "dsml_v41": DSML_V41}[name]
    return DsmlToolParser(spelling, calls)


class OutputParser:
    """Incremental parser for one model output.

    Args:
        config: The family's output shape.
        call_id: ``index -> id`` for tool calls; default ``call_<random>_<index>``.

    Example:
        >>> p = OutputParser(ParserConfig(reasoning="on"))
        >>> p.feed("hmm</think>Hi") + p.finish()
        [ReasoningDelta(text='hmm'), ContentDelta(text='Hi')]
    """

    def __init__(self, config: ParserConfig, call_id: Callable[[int], str] | None = None) -> None:
        if call_id is None:
            prefix = uuid.uuid4().hex[:16]

            def call_id(index: int) -> str:
                return f"call_{prefix}_{index}"

        self.config = config
        self._calls = CallCounter(call_id)
        self._dialect = _make_dialect(config.tools, self._calls)
        self._buf = ""
        self._leading = config.reasoning == "on"
        self._stage = {"off": "content", "on": "reasoning", "detect": "detect"}[config.reasoning]
        tool_starts = self._dialect.start_markers if self._dialect else ()
        ends = [(m, False, "end") for m in config.end_markers]
        tools = [(m, True, "tools") for m in tool_starts]
        self._markers = {
            "reasoning": [(THINK_END, True, "think_end"), *tools, *ends],
            "content": [*tools, (THINK_END, False, "stray"), *[(s, False, "stop") for s in config.stop], *ends],
        }

    @property
    def finished(self) -> bool:
        """True once a stop string or end marker matched, or :meth:`finish` ran."""
        return self._stage == "done"

    def feed(self, text: str) -> list[Event]:
        """Add model text; return the events it completes (possibly none)."""
        self._buf += text
        events: list[Event] = []
        while self._step(events):
            pass
        return events

    def finish(self) -> list[Event]:
        """End of output: flush held-back text and close anything left open."""
        events: list[Event] = []
        while self._step(events):
            pass
        buf, self._buf = self._buf, ""
        if self._stage in ("detect", "content"):
            text = buf.lstrip("\n") if self._leading or self._stage == "detect" else buf
            if text:
                events.append(ContentDelta(text))
        elif self._stage == "reasoning":
            text = buf.lstrip("\n") if self._leading else buf
            if text:
                events.append(ReasoningDelta(text))
        elif self._stage == "tools":
            events.extend(self._dialect.finish())
        elif self._stage == "after_tools" and buf.strip():
            events.append(ParseIssue("content_after_tool_calls", buf.rstrip()))
        self._stage = "done"
        return events

    # -- stages ------------------------------------------------------------------------
    def _step(self, events: list[Event]) -> bool:
        if not self._buf or self._stage == "done":
            self._buf = "" if self._stage == "done" else self._buf
            return False
        if self._stage == "detect":
            return self._detect()
        if self._stage == "tools":
            return self._tools(events)
        if self._stage == "after_tools":
            return self._after_tools(events)
        return self._text(events)

    def _detect(self) -> bool:
        rest = self._buf.lstrip(" \n")
        if rest.startswith(THINK_START):
            self._buf = rest[len(THINK_START) :]
            self._stage, self._leading = "reasoning", True
            return True
        if THINK_START.startswith(rest):
            return False
        self._stage, self._leading = "content", True
        return True

    def _text(self, events: list[Event]) -> bool:
        buf = self._buf
        if self._leading:
            stripped = buf.lstrip("\n")
            if not stripped:
                self._buf = ""
                return False
            self._leading = False
            self._buf = buf = stripped
        markers = self._markers[self._stage]
        delta = ReasoningDelta if self._stage == "reasoning" else ContentDelta
        found = find_earliest(buf, [m for m, _, _ in markers])
        if found is None:
            hold = partial_suffix_len(buf, [m for m, _, _ in markers])
            if any(eat for _, eat, _ in markers):
                hold = len(buf) - _newline_start(buf, len(buf) - hold)
            ready = len(buf) - hold
            if ready:
                events.append(delta(buf[:ready]))
                self._buf = buf[ready:]
            return False
        pos, marker = found
        eat, action = next((e, a) for m, e, a in markers if m == marker)
        start = _newline_start(buf, pos) if eat else pos
        if start:
            events.append(delta(buf[:start]))
        self._buf = buf[pos + len(marker) :]
        self._apply(action, marker, events)
        return True

    def _apply(self, action: str, marker: str, events: list[Event]) -> None:
        if action == "think_end":
            self._stage, self._leading = "content", True
        elif action == "tools":
            self._dialect.begin(marker)
            self._stage = "tools"
        elif action == "stray":
            events.append(ParseIssue("extra_end_of_thinking", marker))
        elif action == "stop":
            events.append(StopMatched(marker))
            self._stage = "done"
        else:
            self._stage = "done"

    def _tools(self, events: list[Event]) -> bool:
        consumed, new_events, closed = self._dialect.step(self._buf)
        self._buf = self._buf[consumed:]
        events.extend(new_events)
        if closed:
            if self._dialect.resumes_content:
                self._stage, self._leading = "content", True
            else:
                self._stage = "after_tools"
        return bool(consumed or new_events or closed)

    def _after_tools(self, events: list[Event]) -> bool:
        buf = self._buf
        found = find_earliest(buf, self.config.end_markers)
        if found:
            if buf[: found[0]].strip():
                events.append(ParseIssue("content_after_tool_calls", buf[: found[0]].rstrip()))
            self._buf, self._stage = "", "done"
            return False
        # Report up to the last visible character; trailing whitespace waits (it is dropped
        # at the end of output), so the reported text does not depend on chunking.
        ready = len(buf) - partial_suffix_len(buf, self.config.end_markers)
        end = len(buf[:ready].rstrip())
        if end:
            events.append(ParseIssue("content_after_tool_calls", buf[:end]))
        self._buf = buf[end:]
        return False


def _newline_start(buf: str, pos: int) -> int:
    """Move ``pos`` left over the run of newlines that ends there."""
    while pos > 0 and buf[pos - 1] == "\n":
        pos -= 1
    return pos
