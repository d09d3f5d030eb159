# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Which output parser goes with which chat format."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from deepinfer_recipe.parsing.output_parser import OutputParser, ParserConfig

DEEPSEEK_EOS = "<｜end▁of▁sentence｜>"
_QWEN_ENDS = ("<|im_end|>", "<|endoftext|>")

# format -> (tool dialect, reasoning when thinking, reasoning when not thinking, end markers)
_FORMATS: dict[str, tuple[str | None, str, str, tuple[str, ...]]] = {
    "deepseek_v3": ("deepseek_v3", "detect", "detect", (DEEPSEEK_EOS,)),
    "deepseek_v31": ("deepseek_v31", "on", "off", (DEEPSEEK_EOS,)),
    "deepseek_v32": ("dsml_v32", "on", "off", (DEEPSEEK_EOS,)),
    "deepseek_v4": ("dsml_v4", "on", "off", (DEEPSEEK_EOS,)),
    "deepseek_v41": ("dsml_v41", "on", "off", (DEEPSEEK_EOS,)),
    "qwen3": ("hermes", "detect", "detect", _QWEN_ENDS),
    "hermes": ("hermes", "detect", "detect", _QWEN_ENDS),
    "plain": (None, "detect", "detect", ()),
}
PARSER_FORMATS = tuple(_FORMATS)


def parser_config(fmt: str, *, thinking: bool = False, tools: bool = True, stop: Sequence[str] = ()) -> ParserConfig:
    """The :class:`ParserConfig` of a chat format.

    Args:
        fmt: One of PARSER_FORMATS.
        thinking: The prompt was rendered in thinking mode.
        tools: Parse tool calls (False: tool markup is plain text, e.g. ``tool_choice=none``).
        stop: Stop strings.

    Raises:
        ValueError: unknown format.
    """
    if fmt not in _FORMATS:
        raise ValueError(f"format: unknown chat format {fmt!r} (known: {PARSER_FORMATS})")
    dialect, on, off, ends = _FORMATS[fmt]
    return ParserConfig(
        reasoning=on if thinking else off,
        tools=dialect if tools else None,
        stop=tuple(stop),
        end_markers=ends,
    )


def make_output_parser(
    fmt: str,
    *,
    thinking: bool = False,
    tools: bool = True,
    stop: Sequence[str] = (),
    call_id: Callable[[int], str] | None = None,
) -> OutputParser:
    """A fresh streaming parser for one output of a chat format (see :func:`parser_config`)."""
    return OutputParser(parser_config(fmt, thinking=thinking, tools=tools, stop=stop), call_id)
