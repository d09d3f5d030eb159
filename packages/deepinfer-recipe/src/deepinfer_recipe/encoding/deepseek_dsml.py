# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""DeepSeek V3.2, V4 and V4.1 chat formats (DSML tool calls).

Rules (from the DeepSeek V4 / V4.1 release encoders, ``encoding_dsv4.py`` /
``encoding_dsv41.py``; V3.2 shares the skeleton with the ``function_calls`` block):

* BOS once; system text raw (V4.1: ``<｜System｜>`` + text, also for a mid-conversation
  system turn, which then counts as a user-like turn); tools and response format are
  appended to the first system turn (a system turn is created when there is none).
* user: ``<｜User｜>`` + text; developer: ``<｜User｜>`` + text (+ tools).
* tool turns are merged into one user turn as ``<tool_result>…</tool_result>`` blocks
  (V3.2: ``\\n<result>…</result>``) joined by blank lines, reordered to follow the order
  of the preceding assistant's calls.
* assistant: ``[reasoning</think>]content[\\n\\n<DSML block>]`` + EOS. In thinking mode the
  reasoning of turns before the last user turn is dropped unless tools are on offer.
* After a user-like turn followed by an assistant turn (or at the end): ``<｜Assistant｜>``
  then ``<think>`` (thinking, and the turn is kept) or ``</think>``.
* Reasoning effort: V4 ``max`` adds a fixed paragraph at the start (thinking only); V4.1
  adds ``<｜System｜>Reasoning Effort: N (…)`` (thinking only; default ``high`` = 50).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from deepinfer_recipe.conversation import Conversation, Message
from deepinfer_recipe.encoding import deepseek_prompts as P
from deepinfer_recipe.encoding import deepseek_tokens as T
from deepinfer_recipe.encoding.prompt import Prompt, PromptBuilder
from deepinfer_recipe.parsing.dsml import DSML, DSML_V4, DSML_V32, DSML_V41, DsmlSpelling


@dataclass(frozen=True)
class DsmlFormat:
    """What differs between the DSML generations.

    Args:
        spelling: DSML tag names.
        system_token: V4.1 marks system text with ``<｜System｜>``.
        effort: ``"none"`` (V3.2), ``"v4"`` or ``"v41"``.
        result_open: Text before a tool result.
        result_close: Text after a tool result.
    """

    spelling: DsmlSpelling
    system_token: bool
    effort: str
    result_open: str = "<tool_result>"
    result_close: str = "</tool_result>"


V32 = DsmlFormat(DSML_V32, False, "none", "\n<result>", "</result>")
V4 = DsmlFormat(DSML_V4, False, "v4")
V41 = DsmlFormat(DSML_V41, True, "v41")


@dataclass
class _Turn:
    role: str
    msg: Message | None = None
    blocks: list[tuple[str, str, int]] | None = None  # merged user turn: (kind, text, call order)


def _merge(conv: Conversation) -> list[_Turn]:
    """Fold tool turns (and user text right after them) into user turns; order results."""
    turns: list[_Turn] = []
    call_order: dict[str, int] = {}
    for msg in conv.messages:
        if msg.role == "assistant" and msg.tool_calls:
            call_order = {c.id: i for i, c in enumerate(msg.tool_calls)}
        last = turns[-1] if turns else None
        merging = last is not None and last.blocks is not None
        if msg.role == "tool":
            block = ("result", msg.content, call_order.get(msg.tool_call_id or "", 0))
            if merging:
                last.blocks.append(block)
            else:
                turns.append(_Turn("user", None, [block]))
        elif msg.role == "user" and merging:
            last.blocks.append(("text", msg.content, -1))
        else:
            turns.append(_Turn(msg.role, msg))
    for turn in turns:
        if turn.blocks is not None:
            results = iter(sorted((b for b in turn.blocks if b[0] == "result"), key=lambda b: b[2]))
            turn.blocks = [next(results) if b[0] == "result" else b for b in turn.blocks]
    return turns


def _is_user_like(fmt: DsmlFormat, turns: list[_Turn], i: int) -> bool:
    role = turns[i].role
    return role in ("user", "developer") or (fmt.system_token and role == "system" and i > 0)


def _effort_prefix(fmt: DsmlFormat, conv: Conversation, b: PromptBuilder) -> bool:
    """Write the reasoning-effort text; return True if V4.1 already wrote ``<｜System｜>``."""
    effort = conv.reasoning_effort
    if fmt.effort == "v4":
        if effort not in (None, "high", "max"):
            raise ValueError(f"reasoning_effort: {effort!r} not supported by deepseek_v4 (high|max)")
        if conv.thinking and effort == "max":
            b.control(P.REASONING_EFFORT_MAX_V4)
        return False
    if fmt.effort == "v41":
        effort = "high" if effort is None else effort
        if isinstance(effort, bool) or not (
            (isinstance(effort, int) and 1 <= effort <= 100) or effort in P.V41_EFFORT_LEVELS
        ):
            raise ValueError(f"reasoning_effort: {effort!r} must be 1..100 or one of {list(P.V41_EFFORT_LEVELS)}")
        if conv.thinking:
            budget = P.V41_EFFORT_LEVELS.get(effort, effort)
            b.control(T.SYSTEM + P.v41_effort_line(budget))
            return True
    return False


def _tools_and_format(fmt: DsmlFormat, conv: Conversation, b: PromptBuilder) -> None:
    if conv.tools:
        head, tail = P.tools_instructions(fmt.spelling)
        b.control("\n\n" + head)
        for i, tool in enumerate(conv.tools):
            b.control("\n" if i else "").content(json.dumps(tool.function_dict(), ensure_ascii=False))
        b.control(tail)
    if conv.response_format is not None:
        b.control("\n\n" + P.RESPONSE_FORMAT_HEAD)
        b.content(json.dumps(conv.response_format, ensure_ascii=False))


def _params(call_args: str, s: DsmlSpelling, b: PromptBuilder) -> None:
    for i, (key, value) in enumerate(json.loads(call_args).items()):
        is_str = isinstance(value, str)
        b.control(("\n" if i else "") + f'<{DSML}{s.parameter} name="').content(key)
        b.control(f'" string="{"true" if is_str else "false"}">')
        b.content(value if is_str else json.dumps(value, ensure_ascii=False))
        b.control(f"</{DSML}{s.parameter}>")


def _assistant(msg: Message, fmt: DsmlFormat, keep_reasoning: bool, thinking: bool, b: PromptBuilder) -> None:
    s = fmt.spelling
    if thinking and keep_reasoning:
        b.content(msg.reasoning or "").control(T.THINK_END)
    b.content(msg.content)
    if msg.tool_calls:
        b.control(f"\n\n<{DSML}{s.block}>\n")
        for i, call in enumerate(msg.tool_calls):
            b.control(("\n" if i else "") + f'<{DSML}{s.invoke} name="').content(call.name).control('">\n')
            _params(call.arguments, s, b)
            b.control(f"\n</{DSML}{s.invoke}>")
        b.control(f"\n</{DSML}{s.block}>")
    b.control(T.EOS)


def encode_dsml_chat(
    conv: Conversation, fmt: DsmlFormat, *, add_generation_prompt: bool = True, add_bos: bool = True
) -> Prompt:
    """Render a conversation in a DSML format (see module docstring).

    Args:
        conv: The conversation.
        fmt: ``V32``, ``V4`` or ``V41``.
        add_generation_prompt: Append the assistant header after a final user-like turn.
        add_bos: Start with BOS.

    Returns:
        The prompt segments.

    Raises:
        ValueError: unsupported ``reasoning_effort`` for the format.
    """
    turns = _merge(conv)
    if (conv.tools or conv.response_format is not None) and turns[0].role != "system":
        turns.insert(0, _Turn("system", Message("system", "")))
    drop = conv.thinking and not conv.tools
    last_user = max((i for i in range(len(turns)) if _is_user_like(fmt, turns, i)), default=-1)
    if drop:
        turns = [t for i, t in enumerate(turns) if not (t.role == "developer" and i < last_user)]
        last_user = max((i for i in range(len(turns)) if _is_user_like(fmt, turns, i)), default=-1)
    b = PromptBuilder()
    if add_bos:
        b.control(T.BOS)
    wrote_system_token = _effort_prefix(fmt, conv, b)
    for i in range(len(turns)):
        _render_turn(conv, fmt, turns, i, last_user, drop, wrote_system_token, b)
        nxt = turns[i + 1].role if i + 1 < len(turns) else None
        at_end = nxt is None and add_generation_prompt
        if _is_user_like(fmt, turns, i) and (nxt == "assistant" or at_end):
            think = conv.thinking and (not drop or i >= last_user)
            b.control(T.ASSISTANT + (T.THINK_START if think else T.THINK_END))
    return b.build()


def _render_turn(
    conv: Conversation,
    fmt: DsmlFormat,
    turns: list[_Turn],
    i: int,
    last_user: int,
    drop: bool,
    wrote_system_token: bool,
    b: PromptBuilder,
) -> None:
    turn = turns[i]
    if turn.role == "system":
        if fmt.system_token and not (i == 0 and wrote_system_token):
            b.control(T.SYSTEM)
        b.content(turn.msg.content)
        if i == 0:
            _tools_and_format(fmt, conv, b)
    elif turn.role == "developer":
        b.control(T.USER).content(turn.msg.content)
    elif turn.role == "user" and turn.blocks is None:
        b.control(T.USER).content(turn.msg.content)
    elif turn.role == "user":
        b.control(T.USER)
        for j, (kind, text, _) in enumerate(turn.blocks):
            b.control("\n\n" if j else "")
            if kind == "text":
                b.content(text)
            else:
                b.control(fmt.result_open).content(text).control(fmt.result_close)
    else:
        keep = not drop or i > last_user
        _assistant(turn.msg, fmt, keep, conv.thinking, b)
