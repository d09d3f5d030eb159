# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Detokenization once, when the output ends: for callers that read the text only then.

`IncrementalDetokenizer` decodes a window of ids for every token (two `decode` calls a token),
because a stream or a stop string needs the text as it grows. An offline call without stop
strings reads the text only at the end, so `FinalDetokenizer` collects the ids and decodes the
whole output once: two `decode` calls a request instead of two a token.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from deepinfer_recipe.detokenizer import IncrementalDetokenizer


class FinalDetokenizer:
    """Collects output ids; `flush` returns their text, decoded in the prompt's context.

    `IncrementalDetokenizer`'s `push` / `flush` and decoding context (its class docstring states
    the invariant used here), but `push` never decodes and always returns "", and `flush` returns
    the whole output's text: ``decode(ctx + out)[len(decode(ctx)):]`` (``ctx``: the last ``context`` prompt ids).
    Where decoding is prefix-stable (byte-level BPE always is) this equals the concatenated
    `push` results plus `flush` of an `IncrementalDetokenizer` over the same ids. Where the
    prompt context's text is not a prefix of the whole decode (the context ends inside a
    character that the output completes, or the output changes how the context decodes), the
    text is what an `IncrementalDetokenizer` would have streamed, computed at `flush`. An output
    cut off without its end (a failed or aborted request) takes `cut` instead of `flush`: what
    that stream would have released by then.

    Args:
        decode: ``ids -> str`` of the tokenizer; bind options such as ``skip_special_tokens``.
        prompt_ids: Ids before the output; the last ``context`` of them are decoding context.
        context: How many prompt ids are decoding context (>= 0); the incremental default.

    Attributes:
        context: The ``context`` argument.

    Raises:
        ValueError: ``context`` < 0 (names the field).
    """

    def __init__(self, decode: Callable[[Sequence[int]], str], prompt_ids: Sequence[int] = (),
                 context: int = 6) -> None:
        if context < 0:
            raise ValueError(f"context: must be >= 0, got {context}")
        self._decode = decode
        self.context = context
        self._context_ids: list[int] = list(prompt_ids)[-context:] if context else []
        self._ids: list[int] = []

    def push(self, ids: Sequence[int]) -> str:
        """Add output ids; returns "" (the text comes from `flush`)."""
        self._ids.extend(ids)
        return ""

    def flush(self) -> str:
        """The text of the ids pushed since the last `flush` (all of them, the first time); their
        ids then become the decoding context of the next `flush`.

        Raises:
            Exception: whatever ``decode`` raises (e.g. for an unknown id); the pending ids are
                dropped first, so a later `flush` returns only what was pushed after.
        """
        if not self._ids:
            return ""
        ids, self._ids = self._ids, []
        head = self._decode(self._context_ids)
        whole = self._decode(self._context_ids + ids)
        if whole.startswith(head):
            text = whole[len(head):]
        else:
            stream = IncrementalDetokenizer(self._decode, self._context_ids, context=self.context)
            text = stream.push(ids) + stream.flush()
        self._context_ids = (self._context_ids + ids)[-self.context:] if self.context else []
        return text

    def cut(self) -> str:
        """The output ends without `flush` (a request that failed or was aborted): the text an
        `IncrementalDetokenizer` would have released for the pending ids by its last `push`,
        which holds back an incomplete trailing character. The pending ids are dropped.

        Raises:
            Exception: whatever ``decode`` raises (the pending ids are dropped first).
        """
        ids, self._ids = self._ids, []
        if not ids:
            return ""
        stream = IncrementalDetokenizer(self._decode, self._context_ids, context=self.context)
        self._context_ids = (self._context_ids + ids)[-self.context:] if self.context else []
        return "".join([stream.push([token]) for token in ids])
