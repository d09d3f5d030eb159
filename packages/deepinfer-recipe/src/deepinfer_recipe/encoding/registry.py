# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""One entry point for every built-in chat format."""

from __future__ import annotations

from deepinfer_recipe.conversation import Conversation
from deepinfer_recipe.encoding.deepseek_dsml import V4, V32, V41, encode_dsml_chat
from deepinfer_recipe.encoding.deepseek_v3 import encode_deepseek_v3, encode_deepseek_v31
from deepinfer_recipe.encoding.prompt import Prompt

CHAT_FORMATS = ("deepseek_v3", "deepseek_v31", "deepseek_v32", "deepseek_v4", "deepseek_v41")


def encode_chat(conv: Conversation, fmt: str, *, add_generation_prompt: bool = True, add_bos: bool = True) -> Prompt:
    """Render a conversation in a built-in DeepSeek chat format.

    Args:
        conv: The conversation.
        fmt: One of CHAT_FORMATS. For any other model use :func:`render_chat_template`
            with the model's own ``chat_template``.
        add_generation_prompt: Append the assistant header after a final user turn.
        add_bos: Start with BOS.

    Returns:
        Prompt segments (``.text`` for the string; :class:`PromptTokenizer` for ids).

    Raises:
        ValueError: unknown format, or a setting the format does not support.
    """
    kwargs = {"add_generation_prompt": add_generation_prompt, "add_bos": add_bos}
    if fmt == "deepseek_v3":
        return encode_deepseek_v3(conv, **kwargs)
    if fmt == "deepseek_v31":
        return encode_deepseek_v31(conv, **kwargs)
    formats = {"deepseek_v32": V32, "deepseek_v4": V4, "deepseek_v41": V41}
    if fmt not in formats:
        raise ValueError(f"format: unknown chat format {fmt!r} (known: {CHAT_FORMATS})")
    return encode_dsml_chat(conv, formats[fmt], **kwargs)
