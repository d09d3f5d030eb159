# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Render any Hugging Face ``chat_template`` (jinja) into prompt segments.

The template is rendered the way ``transformers`` renders it (sandboxed jinja,
``trim_blocks``/``lstrip_blocks``, ``loopcontrols``, a ``tojson`` that keeps non-ASCII,
``raise_exception``, ``strftime_now``), with one addition: every client string is marked.

* Message text (content, reasoning, tool-call names and argument text, tool names) is
  wrapped in private-use sentinels U+E000 … U+E001; leading/trailing whitespace stays
  outside the wrapper so template ``trim``/``strip`` calls behave as usual.
* Inside client strings (and everywhere in tool schemas), every special-token string of the
  tokenizer is swapped for a placeholder U+E002 ``k`` U+E003 before rendering, so template
  logic that searches for markers (``'</think>' in content``) never sees a client's copy.

After rendering, the sentinels become segment boundaries: wrapped text and placeholders are
content, everything else is template (control) text. For inputs without special strings the
rendered text equals the plain rendering exactly.
"""

from __future__ import annotations

import functools

import json
import re
from collections.abc import Sequence
from datetime import datetime

from deepinfer_recipe.conversation import Conversation, Message
from deepinfer_recipe.encoding.prompt import Prompt, PromptBuilder

_OPEN, _CLOSE, _PH_OPEN, _PH_CLOSE = "\ue000", "\ue001", "\ue002", "\ue003"
_MARKS = re.compile("[\ue000-\ue003]")
_PLACEHOLDER = re.compile("\ue002(\\d+)\ue003")


def _raise_exception(message: str) -> None:
    from jinja2.exceptions import TemplateError

    raise TemplateError(message)


def _tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


class _Protector:
    """Wraps client strings and replaces special-token strings with numbered placeholders."""

    def __init__(self, special_tokens: Sequence[str]) -> None:
        tokens = sorted({t for t in special_tokens if t}, key=len, reverse=True)
        alternatives = [re.escape(t) for t in tokens] + ["[\ue000-\ue003]"]
        self._pattern = re.compile("|".join(alternatives))
        self.originals: list[str] = []

    def hide(self, text: str) -> str:
        def swap(match: re.Match) -> str:
            self.originals.append(match.group(0))
            return f"{_PH_OPEN}{len(self.originals) - 1}{_PH_CLOSE}"

        return self._pattern.sub(swap, text)

    def wrap(self, text: str | None) -> str | None:
        if text is None or not text.strip():
            return text
        core = text.strip()
        start = text.index(core)
        return text[:start] + _OPEN + self.hide(core) + _CLOSE + text[start + len(core) :]

    def hide_all(self, value):
        if isinstance(value, str):
            return self.hide(value)
        if isinstance(value, dict):
            return {self.hide_all(k): self.hide_all(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.hide_all(v) for v in value]
        return value


def _message_dict(msg: Message, p: _Protector, none_for_empty_call_content: bool) -> dict:
    out: dict = {"role": msg.role, "content": p.wrap(msg.content)}
    if msg.tool_calls and not msg.content and none_for_empty_call_content:
        out["content"] = None
    if msg.reasoning is not None:
        out["reasoning_content"] = p.wrap(msg.reasoning)
    if msg.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": p.wrap(call.name), "arguments": p.wrap(call.arguments)},
            }
            for call in msg.tool_calls
        ]
    if msg.tool_call_id is not None:
        out["tool_call_id"] = msg.tool_call_id
    if msg.name is not None:
        out["name"] = p.wrap(msg.name)
    return out


def _segments(rendered: str, originals: list[str]) -> Prompt:
    b = PromptBuilder()
    depth = 0
    pos = 0
    for match in _MARKS.finditer(rendered):
        if match.start() < pos:
            continue
        text = rendered[pos : match.start()]
        (b.content if depth else b.control)(text)
        mark = match.group(0)
        pos = match.end()
        if mark == _OPEN:
            depth += 1
        elif mark == _CLOSE:
            depth -= 1
        elif mark == _PH_OPEN:
            ph = _PLACEHOLDER.match(rendered, match.start())
            if ph is None:
                raise ValueError("chat_template: the template altered a protected placeholder")
            b.content(originals[int(ph.group(1))])
            pos = ph.end()
        else:
            raise ValueError("chat_template: the template altered a protected placeholder")
        if depth < 0:
            raise ValueError("chat_template: the template split protected client text")
    if depth != 0:
        raise ValueError("chat_template: the template split protected client text")
    (b.content if depth else b.control)(rendered[pos:])
    return b.build()


@functools.lru_cache(maxsize=32)
def _compiled(template: str) -> object:
    """The template compiled once per source text (compiling costs milliseconds, more than a
    render); a compiled jinja2 template renders from any thread."""
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env.from_string(template)


def render_chat_template(
    template: str,
    conv: Conversation,
    *,
    special_tokens: Sequence[str] = (),
    bos_token: str = "",
    eos_token: str = "",
    add_generation_prompt: bool = True,
    none_for_empty_call_content: bool = False,
    thinking_variables: bool = True,
    **template_kwargs,
) -> Prompt:
    """Render a Hugging Face chat template with client text marked as content.

    Args:
        template: The jinja source (``chat_template`` of tokenizer_config.json).
        conv: The conversation. ``conv.thinking`` is passed as ``enable_thinking`` and
            ``thinking`` unless given in ``template_kwargs`` (or ``thinking_variables`` is False).
        special_tokens: Every added-token string of the tokenizer (see
            :func:`deepinfer_recipe.tokenization.added_token_strings`); client copies are
            hidden from the template logic.
        bos_token: Value of the template variable ``bos_token``.
        eos_token: Value of the template variable ``eos_token``.
        add_generation_prompt: Ask the template for the assistant header.
        none_for_empty_call_content: Pass ``content=None`` for assistant turns that only
            carry tool calls (the DeepSeek-V3 template tests ``content is none``).
        thinking_variables: Define ``enable_thinking``/``thinking`` from ``conv.thinking``;
            False leaves them undefined unless ``template_kwargs`` sets them, as
            transformers' ``apply_chat_template`` does (templates may test ``is defined``).
        **template_kwargs: Extra template variables.

    Returns:
        The prompt segments.

    Raises:
        ValueError: the template split or rewrote protected client text.
        jinja2.TemplateError: the template itself failed (``raise_exception``).
    """
    p = _Protector([*special_tokens, bos_token, eos_token])
    messages = [_message_dict(m, p, none_for_empty_call_content) for m in conv.messages]
    tools = [{"type": "function", "function": p.hide_all(t.function_dict())} for t in conv.tools] or None
    variables = {
        "messages": messages,
        "tools": tools,
        "add_generation_prompt": add_generation_prompt,
        "bos_token": bos_token,
        "eos_token": eos_token,
    }
    if thinking_variables:
        variables.update(enable_thinking=conv.thinking, thinking=conv.thinking)
    variables.update(template_kwargs)
    rendered = _compiled(template).render(**variables)
    return _segments(rendered, p.originals)
