# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""A rich progress bar fed by the engine's `on_progress(done, total, new_tokens)` callback."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class GenerationProgress:
    """Requests done / total and output tok/s, redrawn as the engine reports steps.

    The callback may be called by several `generate` calls in a row (e.g. chat and plain prompts):
    `done` counts within one call, so completed requests of earlier calls are carried over.
    """

    def __init__(self, console: Console, total: int):
        self.total = total
        self.tokens = 0
        self.carried = 0
        self.last_done = 0
        self.start = time.perf_counter()
        self.progress = Progress(
            TextColumn("[bold]generating"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[rate]} tok/s"), TimeElapsedColumn(),
            console=console, transient=True, disable=not console.is_terminal)  # no bar in pipes
        self.task = self.progress.add_task("generate", total=total, rate="0.0")

    def __enter__(self) -> "GenerationProgress":
        self.progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)

    def update(self, done: int, total: int, new_tokens: int) -> None:
        if done < self.last_done:  # a new generate() call started
            self.carried += self.last_done
        self.last_done = done
        self.tokens += new_tokens
        rate = self.tokens / max(time.perf_counter() - self.start, 1e-9)
        self.progress.update(self.task, completed=self.carried + done, rate=f"{rate:.1f}")
