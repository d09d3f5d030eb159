# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""When a request stops: token-level checks (engine core) and stop strings (frontend text)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from deepinfer_core.engine.request import RequestStatus

if TYPE_CHECKING:
    from deepinfer_core.engine.request import Request


def check_token_stop(request: Request, max_model_len: int) -> bool:
    """Finishes `request` if its last output token ends it; sets `status` and `stop_reason`.

    EOS (unless `ignore_eos`) and `stop_token_ids` count only once `min_tokens` tokens exist
    (the sampler also bans them before that). Length limits: `max_tokens` output tokens, or
    prompt + output reaching `max_model_len`.

    Returns:
        True when the request finished.
    """
    params = request.sampling_params
    last = request.output_token_ids[-1]
    num_output = request.num_output_tokens
    if num_output >= params.min_tokens:
        if last == request.eos_token_id and not params.ignore_eos:
            request.status = RequestStatus.FINISHED_STOPPED
            return True
        if last in request.stop_token_ids:
            request.status = RequestStatus.FINISHED_STOPPED
            request.stop_reason = last
            return True
    if (request.max_tokens is not None and num_output >= request.max_tokens) or request.num_tokens >= max_model_len:
        request.status = RequestStatus.FINISHED_LENGTH
        return True
    return False


class StopStringMatcher:
    """Finds stop strings in streamed text and holds back any text that may begin one.

    Feed each new piece of detokenized text to `feed`; it returns the text that is safe to show.
    Text is withheld only while it is a proper prefix of some stop string, so a stop string (or
    the start of one) is never shown and later text never needs to be taken back. Each call
    scans only the new text plus the withheld text (shorter than the longest stop string).

    Args:
        stops: the stop strings (non-empty).
        include_stop_str_in_output: keep the matched stop string in the output.
    """

    def __init__(self, stops: list[str], include_stop_str_in_output: bool = False) -> None:
        self.stops = list(stops)
        self.include = include_stop_str_in_output
        self._max_len = max((len(s) for s in self.stops), default=0)
        self._pending = ""  # text received but not yet released
        self.matched: str | None = None

    def feed(self, text: str) -> str:
        """Takes new text; returns the text now safe to release ("" after a match).

        After a match `matched` holds the stop string and the returned text ends right before it
        (or right after it with `include_stop_str_in_output`).
        """
        if self.matched is not None or not text:
            return ""
        if not self.stops:
            return text
        # Released text holds no match and no suffix that could start one, so a new match lies
        # inside the withheld text plus the new text.
        window = self._pending + text
        cut = None
        for stop in self.stops:
            i = window.find(stop)
            if i >= 0 and (cut is None or i < cut[0]):
                cut = (i, stop)
        if cut is not None:
            i, stop = cut
            self.matched = stop
            self._pending = ""
            return window[: i + len(stop)] if self.include else window[:i]
        hold = self._held_suffix_len(window)
        self._pending = window[len(window) - hold:] if hold else ""
        return window[: len(window) - hold]

    def flush(self) -> str:
        """Releases withheld text at the end of the request (no stop string followed)."""
        out, self._pending = self._pending, ""
        return out if self.matched is None else ""

    def _held_suffix_len(self, window: str) -> int:
        for k in range(min(len(window), self._max_len - 1), 0, -1):
            tail = window[-k:]
            if any(s.startswith(tail) for s in self.stops):
                return k
        return 0
