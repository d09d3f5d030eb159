# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Incremental detokenization: token ids in, text deltas out, no broken UTF-8, no duplicates."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenizers import Tokenizer

# Prompt tokens decoded as context before the output: SentencePiece-style decoders strip the
# leading space of a sequence's first token, and with context the output keeps it.
CONTEXT_TOKENS = 6
# A character is at most 4 UTF-8 bytes, so at most 3 tokens can hold its incomplete head.
MAX_INCOMPLETE_TOKENS = 3
# Tokens without new text before the window is forced forward (a run of genuine U+FFFD, or of
# skipped special tokens): bounds the work per token instead of letting it grow with the output.
MAX_PENDING_TOKENS = 8

_REPLACEMENT = "\ufffd"


class IncrementalDetokenizer:
    """Turns a stream of output token ids into text deltas (prefix/read-offset scheme).

    Two offsets into the id window: text of `ids[prefix:read]` was already released; each step
    decodes `ids[prefix:]` and releases what lies beyond the decoded `ids[prefix:read]` unless
    it ends in U+FFFD (an incomplete UTF-8 character: a byte-fallback token or a byte-level BPE
    token that splits a character). The same idea as vLLM's and TGI's detokenizers.

    Why not `tokenizers.decoders.DecodeStream` (tokenizers 0.23): seeded with prompt context
    whose text ends in U+FFFD it re-emits that whole context, and on a genuine U+FFFD in the
    output it withholds text forever while its window grows. Here a genuine U+FFFD is released
    after `MAX_PENDING_TOKENS` silent tokens (all but the last `MAX_INCOMPLETE_TOKENS`, which may
    still hold an incomplete character), and `finish()` releases the rest.

    Invariant: the concatenated deltas plus `finish()` equal
    `decode(context + output)[len(decode(context)):]` (context: the prompt's last
    `CONTEXT_TOKENS` tokens) whenever decoding is prefix-stable, i.e. every
    `decode(context + output[:k])` minus trailing U+FFFD is a prefix of the full decode. Byte-level
    BPE always is; a byte-fallback decoder is not when a run of byte tokens turns invalid later
    (it then renders the whole run as U+FFFD), and released text is never taken back.

    Args:
        tokenizer: a `tokenizers.Tokenizer` (for transformers tokenizers: `.backend_tokenizer`).
        prompt_token_ids: the prompt (its tail is decoding context).
        skip_special_tokens: leave special tokens out of the text.
    """

    def __init__(self, tokenizer: Tokenizer, prompt_token_ids: list[int], skip_special_tokens: bool = True) -> None:
        self._tokenizer = tokenizer
        self._skip = skip_special_tokens
        self._ids = list(prompt_token_ids[-CONTEXT_TOKENS:])
        self._prefix = 0  # ids[prefix:read] is context for the next decode
        self._read = len(self._ids)  # text of ids[:read] is released (or is prompt)
        self._prefix_text = self._decode(self._prefix, self._read)

    def step(self, token_id: int) -> str:
        """Adds one output token; returns the newly complete text ("" if none yet).

        Raises:
            Exception: whatever the tokenizer raises for an id it does not know.
        """
        self._ids.append(token_id)
        text = self._decode(self._prefix, len(self._ids))
        if len(text) > len(self._prefix_text) and not text.endswith(_REPLACEMENT):
            return self._advance(text, len(self._ids))
        if len(self._ids) - self._read >= MAX_PENDING_TOKENS:
            upto = len(self._ids) - MAX_INCOMPLETE_TOKENS
            return self._advance(self._decode(self._prefix, upto), upto)
        return ""

    def finish(self) -> str:
        """Releases withheld text at the end of the request (U+FFFD stands for invalid bytes)."""
        if self._read == len(self._ids):
            return ""
        return self._advance(self._decode(self._prefix, len(self._ids)), len(self._ids))

    def _advance(self, text: str, upto: int) -> str:
        """Releases the part of `text` (= decode(ids[prefix:upto])) past the released prefix."""
        if text.startswith(self._prefix_text):
            delta = text[len(self._prefix_text):]
        else:
            # The new tokens changed how the released ones decode (a byte-fallback run that
            # became invalid, or a prompt ending inside a character): decode the new tokens
            # alone rather than repeat or take back released text.
            delta = self._decode(self._read, upto)
        self._prefix, self._read = self._read, upto
        if self._prefix > 4 * CONTEXT_TOKENS:  # keep the id window short
            del self._ids[: self._prefix]
            self._read -= self._prefix
            self._prefix = 0
        self._prefix_text = self._decode(self._prefix, self._read)
        return delta

    def _decode(self, start: int, stop: int) -> str:
        return self._tokenizer.decode(self._ids[start:stop], skip_special_tokens=self._skip)

