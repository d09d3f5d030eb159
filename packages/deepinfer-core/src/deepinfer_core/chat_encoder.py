# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""ChatEncoder: OpenAI-style chat messages -> prompt text and token ids, through deepinfer-recipe."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from deepinfer_recipe import Prompt, PromptTokenizer, conversation_from_openai, render_chat_template

Message = dict[str, Any]


class ChatEncoder:
    """Chat messages -> prompt text and token ids, through deepinfer-recipe.

    OpenAI-style messages become a recipe `Conversation`; the tokenizer's jinja chat template
    renders it the way transformers does (same variables: the special-tokens map, `tools`,
    `add_generation_prompt`), with client text kept apart from template text; `PromptTokenizer`
    then recognises special tokens only in template text. For messages without special-token
    strings the ids equal transformers' `apply_chat_template(..., tokenize=True)`.

    Args:
        tokenizer: a transformers fast tokenizer.
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.prompt_tokenizer = PromptTokenizer.from_hf(tokenizer)
        self.special_tokens = list(self.prompt_tokenizer.added_tokens)

    def encode(self, messages: list[Message], tools: list[dict[str, Any]] | None = None,
               add_generation_prompt: bool = True, chat_template: str | None = None,
               template_kwargs: dict[str, Any] | None = None) -> tuple[str, list[int]]:
        """Renders and tokenizes one conversation (no BOS/EOS added beyond the template's).

        Returns:
            (prompt text, token ids).

        Raises:
            ValueError: malformed messages or tools (names the field, e.g. `messages[1].role`),
                no usable template (names `chat_template`), the template failed or the tokenizer
                rejected the text (names `messages`).
        """
        prompt = self.render(messages, tools, add_generation_prompt, chat_template, template_kwargs)
        return prompt.text, self.tokenize(prompt)

    def tokenize(self, prompt: Prompt) -> list[int]:
        """The rendered prompt's token ids.

        Raises:
            ValueError: the tokenizer rejected the text (e.g. a lone surrogate; names `messages`).
        """
        try:
            return self.prompt_tokenizer.encode(prompt)
        except Exception as exc:  # the tokenizers library raises TypeError for lone surrogates
            raise ValueError(f"messages: cannot tokenize the prompt: {type(exc).__name__}: {exc}") from exc

    def encode_many(self, conversations: Sequence[list[Message]], tools: list[dict[str, Any]] | None = None,
                    add_generation_prompt: bool = True, chat_template: str | None = None,
                    template_kwargs: dict[str, Any] | None = None) -> list[tuple[str, list[int]] | ValueError]:
        """`encode` for several conversations, their token ids in one batch
        (`PromptTokenizer.encode_batch`: the tokenizers library's own threads; on this
        repository's 2-core CPU 15-40% less tokenizer time a conversation at 64-256 of them,
        5-9% on one core: packages/deepinfer-core/BENCHMARKS.md, session 60).

        Returns:
            Per conversation, in order: (prompt text, token ids), equal to `encode`'s, or a
            ValueError (never raised: no traceback, so no reference cycle through the caller's
            frames) with the message `encode` raises for it (other exception types prefixed with
            their name). A conversation that fails never fails the others: when the batch's
            tokenizing raises, every prompt is tokenized alone.
        """
        rendered: list[Prompt | ValueError] = []
        for messages in conversations:
            rendered.append(_attempt(self.render, messages, tools, add_generation_prompt, chat_template,
                                     template_kwargs))
        prompts = [p for p in rendered if not isinstance(p, ValueError)]
        try:
            ids: list[list[int] | ValueError] = list(self.prompt_tokenizer.encode_batch(prompts))
        except Exception:  # noqa: BLE001 - e.g. a lone surrogate: find the prompts that fail, alone
            ids = [_attempt(self.tokenize, p) for p in prompts]
        tokenized = iter(ids)
        out: list[tuple[str, list[int]] | ValueError] = []
        for prompt in rendered:
            if isinstance(prompt, ValueError):
                out.append(prompt)
                continue
            result = next(tokenized)
            out.append(result if isinstance(result, ValueError) else (prompt.text, result))
        return out

    def render(self, messages: list[Message], tools: list[dict[str, Any]] | None = None,
               add_generation_prompt: bool = True, chat_template: str | None = None,
               template_kwargs: dict[str, Any] | None = None) -> Prompt:
        """The conversation rendered by the chat template: a recipe `Prompt` (template and client
        segments), not yet tokenized. Raises as `encode` does (all but the tokenizer's errors)."""
        conv = conversation_from_openai(messages, tools)
        try:
            template = self.tokenizer.get_chat_template(chat_template, tools)
        except ValueError as exc:
            raise ValueError(f"chat_template: {exc}") from exc
        # transformers' template variables: the special-tokens map, overridden by the caller's.
        variables = {**self.tokenizer.special_tokens_map, **(template_kwargs or {})}
        bos, eos = variables.pop("bos_token", None) or "", variables.pop("eos_token", None) or ""
        try:
            return render_chat_template(template, conv, special_tokens=self.special_tokens, bos_token=bos,
                                        eos_token=eos, add_generation_prompt=add_generation_prompt,
                                        thinking_variables=False, **variables)
        except Exception as exc:  # jinja errors, raise_exception() in the template
            raise ValueError(f"messages: cannot apply the chat template: {exc}") from exc


def _attempt(fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)`, or a fresh ValueError with the message of the exception it raised (prefixed
    with the type's name unless a ValueError): the raised one, whose traceback holds the caller's
    frames, is dropped here."""
    try:
        return fn(*args)
    except ValueError as exc:
        return ValueError(str(exc))
    except Exception as exc:  # noqa: BLE001 - returned to the one request it belongs to
        return ValueError(f"{type(exc).__name__}: {exc}")
