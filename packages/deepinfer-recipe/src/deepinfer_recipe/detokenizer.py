# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Incremental detokenization that never emits a broken UTF-8 character and never stalls.

Byte-level BPE and byte-fallback tokenizers can split one character over several tokens;
decoding a prefix then ends in U+FFFD. The detokenizer keeps a short window of recent ids,
decodes it, and releases only text past what the window's already-released part decodes to
(the prefix/read-offset scheme of Hugging Face TGI and vLLM incremental detokenization).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

REPLACEMENT = "\ufffd"
# A character is at most 4 UTF-8 bytes, so at most 3 tokens can hold its incomplete head.
MAX_INCOMPLETE_TOKENS = 3
# Released ids kept in the window before it is trimmed (memory only: decodes never look back
# further than the window's prefix offset).
_TRIM_AFTER = 32


class IncrementalDetokenizer:
    """Streams text for a growing list of token ids.

    Two offsets into the id window: the text of ``ids[prefix:read]`` was already released;
    each new token decodes ``ids[prefix:]`` and releases what lies past the decoded
    ``ids[prefix:read]``, unless the decode ends in U+FFFD (an incomplete character). After
    ``max_pending`` tokens without release, everything but the last
    ``MAX_INCOMPLETE_TOKENS`` tokens is released anyway, so a genuine U+FFFD (from the model,
    or invalid bytes) neither holds text back until the end nor grows the window.

    Invariant: the concatenated ``push`` results plus ``flush()`` equal
    ``decode(ctx + out)[len(decode(ctx)):]`` (``ctx``: the last ``context`` prompt ids)
    whenever decoding is prefix-stable, i.e. every ``decode(ctx + out[:k])`` minus trailing
    U+FFFD is a prefix of the full decode. Byte-level BPE always is; a byte-fallback decoder
    is not when a run of byte tokens turns invalid later (it renders the whole run as
    U+FFFD). Released text is never taken back: the new tokens are then decoded alone.

    Why not ``tokenizers.decoders.DecodeStream`` (tokenizers 0.23): seeded with prompt
    context whose text ends in U+FFFD it re-emits that context, and on a genuine U+FFFD it
    withholds text forever while its window grows.

    Args:
        decode: ``ids -> str`` of the tokenizer (partial UTF-8 decodes to U+FFFD); bind
            options such as ``skip_special_tokens`` into it.
        prompt_ids: Ids before the output; the last ``context`` of them seed the window so
            the first output token is decoded in context (SentencePiece decoders strip the
            leading space of a sequence's first token).
        max_pending: Tokens without released text before the forced release; must exceed
            ``MAX_INCOMPLETE_TOKENS`` (3).
        context: How many prompt ids seed the window (>= 0).

    Attributes:
        context: The ``context`` argument.

    Raises:
        ValueError: ``max_pending`` <= 3 or ``context`` < 0 (names the field).
    """

    def __init__(
        self,
        decode: Callable[[Sequence[int]], str],
        prompt_ids: Sequence[int] = (),
        max_pending: int = 8,
        context: int = 6,
    ) -> None:
        if max_pending <= MAX_INCOMPLETE_TOKENS:
            raise ValueError(f"max_pending: must be > {MAX_INCOMPLETE_TOKENS}, got {max_pending}")
        if context < 0:
            raise ValueError(f"context: must be >= 0, got {context}")
        self._decode_ids = decode
        self._max_pending = max_pending
        self.context = context
        self._ids: list[int] = list(prompt_ids)[-context:] if context else []
        self._prefix = 0  # ids[prefix:read] is decoding context for the next token
        self._read = len(self._ids)  # the text of ids[:read] is released (or is prompt)
        self._prefix_text = self._decode(self._prefix, self._read)

    @property
    def window(self) -> int:
        """Number of ids decoded per step (stays bounded)."""
        return len(self._ids) - self._prefix

    def push(self, ids: Sequence[int]) -> str:
        """Add output ids; return the newly complete text (possibly "").

        Raises:
            Exception: whatever ``decode`` raises (e.g. for an unknown id).
        """
        return "".join([self._step(token) for token in ids])

    def flush(self) -> str:
        """End of output: release withheld text (U+FFFD stands for invalid bytes)."""
        if self._read == len(self._ids):
            return ""
        return self._advance(self._decode(self._prefix, len(self._ids)), len(self._ids))

    def _step(self, token: int) -> str:
        self._ids.append(token)
        text = self._decode(self._prefix, len(self._ids))
        if len(text) > len(self._prefix_text) and not text.endswith(REPLACEMENT):
            return self._advance(text, len(self._ids))
        if len(self._ids) - self._read >= self._max_pending:
            upto = len(self._ids) - MAX_INCOMPLETE_TOKENS
            return self._advance(self._decode(self._prefix, upto), upto)
        return ""

    def _advance(self, text: str, upto: int) -> str:
        """Release the part of ``text`` (= decode of ``ids[prefix:upto]``) past the released text."""
        if text.startswith(self._prefix_text):
            delta = text[len(self._prefix_text) :]
        else:
            # The new ids changed how released ones decode (a byte-fallback run that became
            # invalid, or a prompt ending inside a character): decode the new ids alone
            # rather than repeat or take back released text.
            delta = self._decode(self._read, upto)
        self._prefix, self._read = self._read, upto
        if self._prefix > _TRIM_AFTER:
            del self._ids[: self._prefix]
            self._read -= self._prefix
            self._prefix = 0
        self._prefix_text = self._decode(self._prefix, self._read)
        return delta

    def _decode(self, start: int, stop: int) -> str:
        return self._decode_ids(self._ids[start:stop])
