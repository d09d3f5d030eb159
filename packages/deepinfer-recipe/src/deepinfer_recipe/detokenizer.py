# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Incremental detokenization that never emits a broken UTF-8 character and never stalls.

Byte-level tokenizers can split one character over several tokens; decoding a prefix then
ends in U+FFFD. The detokenizer keeps a small window of recent ids (``prefix_offset`` ..
end), decodes it, and emits only text past what the window's stable part already produced
(the approach of Hugging Face TGI / vLLM incremental detokenization). A trailing U+FFFD is
held back, but at most ``max_pending`` tokens: a real U+FFFD produced by the model (or an
invalid byte sequence) is then emitted instead of growing the window forever.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

REPLACEMENT = "\ufffd"


class IncrementalDetokenizer:
    """Streams text for a growing list of token ids.

    Args:
        decode: ``ids -> str`` of the tokenizer (partial UTF-8 decodes to U+FFFD).
        prompt_ids: Ids before the output; the last few seed the window so the first
            output token is decoded in context (leading-space handling).
        max_pending: Most tokens a trailing U+FFFD may be held for (4 = longest UTF-8
            character in byte-fallback pieces).
        context: How many prompt ids seed the window.
    """

    def __init__(
        self,
        decode: Callable[[Sequence[int]], str],
        prompt_ids: Sequence[int] = (),
        max_pending: int = 4,
        context: int = 5,
    ) -> None:
        if max_pending < 1:
            raise ValueError(f"max_pending: must be >= 1, got {max_pending}")
        self._decode = decode
        self._ids: list[int] = list(prompt_ids[-context:]) if context else []
        self._prefix = 0
        self._read = len(self._ids)
        self._max_pending = max_pending

    @property
    def window(self) -> int:
        """Number of ids currently decoded per step (stays bounded)."""
        return len(self._ids) - self._prefix

    def push(self, ids: Sequence[int]) -> str:
        """Add output ids; return the newly stable text (possibly "")."""
        out = []
        for token in ids:
            self._ids.append(token)
            out.append(self._step(final=False))
        return "".join(out)

    def flush(self) -> str:
        """End of output: return whatever is still held back."""
        return self._step(final=True)

    def _step(self, final: bool) -> str:
        before = self._decode(self._ids[self._prefix : self._read])
        text = self._decode(self._ids[self._prefix :])
        pending = len(self._ids) - self._read
        if len(text) <= len(before) and not final:
            if pending < self._max_pending:
                return ""
        elif text.endswith(REPLACEMENT) and not final and pending < self._max_pending:
            return ""
        new = text[len(before) :]
        self._prefix = self._read
        self._read = len(self._ids)
        return new
