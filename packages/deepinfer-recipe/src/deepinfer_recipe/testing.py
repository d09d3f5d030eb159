# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Helpers for tests of streaming parsers (used by this package's tests and the engine's)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from deepinfer_recipe.events import Event, merge_events
from deepinfer_recipe.parsing.output_parser import OutputParser


def parse_chunks(make_parser: Callable[[], OutputParser], chunks: Iterable[str]) -> list[Event]:
    """Feed ``chunks`` to a fresh parser, finish it, and return the merged events."""
    parser = make_parser()
    events: list[Event] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    events += parser.finish()
    return merge_events(events)


def check_chunking_invariance(make_parser: Callable[[], OutputParser], text: str) -> list[Event]:
    """Assert that whole, every two-way split, and one-char-at-a-time feeds agree.

    Args:
        make_parser: Builds a fresh parser (with deterministic call ids).
        text: Model output.

    Returns:
        The merged events of the whole-text parse.

    Raises:
        AssertionError: naming the first chunking that disagrees.
    """
    whole = parse_chunks(make_parser, [text])
    for cut in range(len(text) + 1):
        split = parse_chunks(make_parser, [text[:cut], text[cut:]])
        assert split == whole, f"split at {cut} ({text[:cut][-12:]!r} | {text[cut:][:12]!r}): {split} != {whole}"
    chars = parse_chunks(make_parser, list(text))
    assert chars == whole, f"one char per chunk: {chars} != {whole}"
    return whole
