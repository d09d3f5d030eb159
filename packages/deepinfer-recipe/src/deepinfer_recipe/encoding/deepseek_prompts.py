# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Fixed instruction texts of the DSML formats (DeepSeek V3.2 / V4 / V4.1).

These strings are part of the model's trained prompt format (they appear verbatim in the
DeepSeek V4 / V4.1 release encoders); changing a character changes what the model sees.
"""

from __future__ import annotations

from deepinfer_recipe.encoding.deepseek_tokens import THINK_END, THINK_START
from deepinfer_recipe.parsing.dsml import DSML, DsmlSpelling


def tools_instructions(s: DsmlSpelling) -> tuple[str, str]:
    """The text before and after the tool schema lines of the ``## Tools`` section.

    Args:
        s: DSML spelling of the format.

    Returns:
        ``(head, tail)``: the section is ``head + "\\n".join(schema_json) + tail``.
    """
    d = DSML
    head = (
        "## Tools\n\n"
        "You have access to a set of tools to help answer the user's question. "
        f'You can invoke tools by writing a "<{d}{s.block}>" block like the following:\n\n'
        f"<{d}{s.block}>\n"
        f'<{d}{s.invoke} name="$TOOL_NAME">\n'
        f'<{d}{s.parameter} name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</{d}{s.parameter}>\n'
        "...\n"
        f"</{d}{s.invoke}>\n"
        f'<{d}{s.invoke} name="$TOOL_NAME2">\n'
        "...\n"
        f"</{d}{s.invoke}>\n"
        f"</{d}{s.block}>\n\n"
        'String parameters should be specified as is and set `string="true"`. For all other '
        "types (numbers, booleans, arrays, objects), pass the value in JSON format and set "
        '`string="false"`.\n\n'
        f"If thinking_mode is enabled (triggered by {THINK_START}), you MUST output your complete "
        f"reasoning inside {THINK_START}...{THINK_END} BEFORE any tool calls or final response.\n\n"
        f"Otherwise, output directly after {THINK_END} with tool calls or final response.\n\n"
        "### Available Tool Schemas\n\n"
    )
    tail = "\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.\n"
    return head, tail


RESPONSE_FORMAT_HEAD = "## Response Format:\n\nYou MUST strictly adhere to the following schema to reply:\n"

REASONING_EFFORT_MAX_V4 = (
    "Reasoning Effort: Absolute maximum with no shortcuts permitted.\n"
    "You MUST be very thorough in your thinking and comprehensively decompose the problem to "
    "resolve the root cause, rigorously stress-testing your logic against all potential paths, "
    "edge cases, and adversarial scenarios.\n"
    "Explicitly write out your entire deliberation process, documenting every intermediate step, "
    "considered alternative, and rejected hypothesis to ensure absolutely no assumption is left "
    "unchecked.\n\n"
)

V41_EFFORT_LEVELS = {"low": 25, "high": 50, "xhigh": 75, "max": 100}


def v41_effort_line(budget: int) -> str:
    """The V4.1 reasoning-effort line for a budget in 1..100."""
    return f"Reasoning Effort: {budget} (range 1-100, the higher the value, the more thorough the reasoning)\n\n"
