# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Server-sent-event framing."""

from __future__ import annotations

import json


def sse_frame(data: dict | str, event: str | None = None) -> bytes:
    """One SSE frame: optional ``event:`` line, one ``data:`` line, blank line.

    Args:
        data: A JSON-able dict (serialised compactly) or a raw string (e.g. ``[DONE]``).
        event: Event name, or None for unnamed events (Chat Completions).

    Returns:
        UTF-8 bytes ending in ``\\n\\n``.
    """
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()
