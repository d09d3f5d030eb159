# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""A request's tokens as bytes for prompt lookup (`LookupAssist`): `TokenBytes` keeps them
appended as the request grows, `match` finds the latest earlier occurrence of the context's
suffix in the last `WINDOW` tokens and measures how far back the two agree. Device-free."""

from __future__ import annotations

import struct
from array import array
from collections.abc import Sequence

from deepinfer_dspark.ngram import WIDTH, continue_period, latest_in_bytes

WINDOW = 1024          # tokens searched (the latest): `bytes.rfind` over them, O(WINDOW) at C speed
LONGEST_MATCH = 64                    # tokens a match is extended backwards at most
_ONE = struct.Struct("=i")            # one token id as `array("i")` stores it (native order, 4 bytes)


def match(ids: Sequence[int], n: int, k: int, lo: int = 0, data: bytes | bytearray | None = None
          ) -> tuple[list[int], int]:
    """(`k` draft tokens, the match's length) from the latest earlier occurrence, at or after
    token `lo`, of the last `n` tokens of `ids` (`ngram.latest_in_bytes`, continued with its
    period: `continue_period`). The length is `n` plus the tokens before both that agree, back
    to `lo`, at most `LONGEST_MATCH`. ([], 0) without an occurrence. `data`: `ids` as bytes."""
    start = latest_in_bytes(array("i", ids).tobytes() if data is None else data, n, lo)
    return ([], 0) if start < 0 else _extend(ids, start, n, k, lo)


def _extend(ids: Sequence[int], start: int, n: int, k: int, lo: int, size: int | None = None
            ) -> tuple[list[int], int]:
    size = len(ids) if size is None else size   # (a live list: its first `size` tokens)
    length, here, there = n, start - 1, size - n - 1
    while length < LONGEST_MATCH and here >= lo and ids[here] == ids[there]:
        length, here, there = length + 1, here - 1, there - 1
    return continue_period(ids, start, n, k, size), length


class TokenBytes:
    """A request's known tokens as 32-bit bytes, appended as it grows, so a search converts only
    the tokens new since the last one (converting a whole window cost ~10 us a search on this
    repository's CPU); the front is dropped once past 2 `WINDOW` tokens. `count`: the tokens
    covered (from the context's start), `base`: the first one kept."""

    __slots__ = ("data", "base", "count", "_seen", "_seen_n", "_seen_upto", "_seen_from")

    def __init__(self) -> None:
        self.data, self.base, self.count = bytearray(), 0, 0
        self._seen: dict[tuple[int, ...], int] = {}   # n-gram followed by a token -> its latest start (`repeats`)
        self._seen_n, self._seen_upto, self._seen_from = 0, 0, 0   # their n, next start, first start

    def repeats(self, view: Sequence[int], known: int, n: int) -> bool:
        """Whether the last `n` of `view[:known]` occurred earlier, followed by a token: False
        means `match` (after `sync(view, known)`) finds nothing, True that it may (the
        occurrence may lie before the window). A filter for a search at every decoding step:
        each n-gram is recorded once, as the request grows past it (with its latest start, for
        `match_view`), and the suffix looked up (~0.5 us on this repository's CPU, where `sync`
        and `match` cost ~2 us, and the H200's host is several times slower: +0.08-0.11 ms a
        step at 1-2 requests in session 34, when `LookupAssist` synced and matched every
        request every step). The record starts over when `n` changes, when `view` holds fewer
        tokens than were added, and from the last `WINDOW` tokens once it spans 3 `WINDOW` (so
        it stays small and its hits mostly lie in the window)."""
        last, upto, seen = known - n, self._seen_upto, self._seen   # last: the suffix's start
        if n != self._seen_n or last < upto or last - self._seen_from > 3 * WINDOW:
            seen.clear()
            self._seen_n = n
            self._seen_from = self._seen_upto = upto = max(0, known - WINDOW)
        if last == upto + 1:   # the n-grams starting before the suffix are followed by a token:
            seen[tuple(view[upto:known - 1])] = upto   # one (a request searched every step) ...
            self._seen_upto = last
        elif last > upto:   # ... or those at upto .. last - 1, zipped from n shifted slices at C speed
            seen.update(zip(zip(*[view[upto + i:last + i] for i in range(n)]), range(upto, last)))   # (session 74;
            self._seen_upto = last   # later starts overwrite earlier ones: each n-gram keeps its latest)
        return last > 0 and tuple(view[last:known]) in seen

    def match_view(self, view: Sequence[int], known: int, n: int, k: int) -> tuple[list[int], int]:
        """What `sync(view, known)` then `match(n, k)` return, read from the n-grams that
        `repeats(view, known, n)` indexed (it must be the last call, with the same arguments):
        the suffix's latest earlier start is the one `repeats` recorded, kept where it lies in the
        last `WINDOW` tokens, and the match is extended and continued over `view` itself, no bytes
        converted or searched (session 74: ~4 -> ~1.5 us a matched search on this repository's
        CPU)."""
        lo = max(0, known - WINDOW)
        start = self._seen.get(tuple(view[known - n:known]), -1)
        if start < lo:
            return [], 0
        return _extend(view, start, n, k, lo, known)

    def sync(self, view: Sequence[int], known: int) -> None:
        """Covers `view[:known]` (tokens already covered are taken as unchanged; fewer than
        covered, or a gap past the window, starts over)."""
        if known == self.count:
            return
        start = max(self.count, known - WINDOW)
        if known < self.count or start > self.count:
            self.data.clear()
            self.base = start = max(0, known - WINDOW)
        if known - start == 1:   # (a decoding step: one token, without a list and an array)
            self.data += _ONE.pack(view[start])
        else:
            self.data += array("i", view[start:known]).tobytes()
        self.count = known
        if known - self.base > 2 * WINDOW:
            drop = known - WINDOW - self.base
            del self.data[:drop * WIDTH]
            self.base += drop

    def match(self, n: int, k: int) -> tuple[list[int], int]:
        """`match` over the last `WINDOW` tokens covered (the byte search first: most searches
        of fresh text find nothing, and then cost no view of the bytes)."""
        lo = max(0, self.count - WINDOW - self.base)
        start = latest_in_bytes(self.data, n, lo)
        if start < 0:
            return [], 0
        with memoryview(self.data) as raw, raw.cast("i") as ids:
            return _extend(ids, start, n, k, lo)
