# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The interpreter's thread switch interval, lowered while structured requests run.

The structured-output mask thread needs the GIL for short stretches between llguidance's
GIL-free calls; with CPython's default interval (5 ms) it gets it only when the engine thread
blocks (see `StructuredOutputManager._switch_interval`). The interval is a single
interpreter-wide setting, so the count of its holders is process-wide.
"""

from __future__ import annotations

import sys
import threading

FILL_SWITCH_INTERVAL_S = 1e-4  # seconds, while any structured request runs in this process


class _SwitchIntervalLeases:
    """Counts the holders of a lowered thread switch interval in this process and restores the
    original value when the last one lets go. The interval is one interpreter-wide setting, so
    its bookkeeping is process-wide too (two engines with overlapping structured requests must
    not restore it under each other)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._saved = 0.0

    def acquire(self) -> None:
        with self._lock:
            if self._holders == 0:
                self._saved = sys.getswitchinterval()
                sys.setswitchinterval(min(self._saved, FILL_SWITCH_INTERVAL_S))
            self._holders += 1

    def release(self) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders == 0:
                sys.setswitchinterval(self._saved)


_LEASES = _SwitchIntervalLeases()


class SwitchIntervalLease:
    """One manager's hold on `_LEASES` (also dropped if the manager is garbage collected)."""

    def __init__(self) -> None:
        self.held = False

    def set(self, held: bool) -> None:
        if held != self.held:
            (_LEASES.acquire if held else _LEASES.release)()
            self.held = held
