# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The context projection of newly committed positions, replayed as CUDA graphs.

After every verification the drafter projects the committed positions' target features into
its context K/V (`DSparkDrafter.context_kv`: fc, hidden_norm, then per draft layer k_proj,
k_norm, RoPE and v_proj). A step commits only a few rows per request (1 + accepted drafts), so
eagerly the projection is a dozen kernel launches of almost no work; on a GPU with a slow host
that is most of its cost. Each row is projected independently of the others, so the step's n
rows are padded to a bucket of `OBSERVE_BUCKETS`, written into static buffers and projected by a
replayed graph; the first n rows of the outputs are the step's K/V.

Padding rows keep whatever an earlier step left in the buffers (finite features, positions
inside the RoPE table: the buffers start at zero and only receive real rows); their outputs are
never read.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from deepinfer_dspark.drafter import DSparkDrafter
from deepinfer_dspark.graph_capture import capture_graph

OBSERVE_BUCKETS = (8, 16, 32, 64, 128, 256, 512)


def observe_bucket(rows: int) -> int | None:
    """The smallest of `OBSERVE_BUCKETS` >= `rows`, or None when `rows` exceeds them all."""
    return next((size for size in OBSERVE_BUCKETS if size >= rows), None)


def row_chunks(counts: Sequence[tuple[str, int]], size: int) -> list[tuple[int, int, list[tuple[str, int]]]]:
    """Splits rows owned by requests in order (`(request_id, n)`: the next n rows) into chunks of
    at most `size` rows: `(first row, end row, [(request_id, rows in the chunk)])`; a request's
    rows may continue into the next chunk.

    Raises:
        ValueError: `size` not an int >= 1, a count not an int >= 0, or a repeated request id
            (names the argument).
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size: must be an int >= 1, got {size!r}")
    if any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for _, n in counts):
        raise ValueError(f"counts: must be ints >= 0, got {[n for _, n in counts][:8]}")
    if len({request_id for request_id, _ in counts}) != len(counts):
        raise ValueError(f"counts: request ids must be distinct, got {[r for r, _ in counts][:8]}")
    chunks, current, lo, filled = [], [], 0, 0
    for request_id, n in counts:
        while n:
            take = min(n, size - filled)
            current.append((request_id, take))
            filled, n = filled + take, n - take
            if filled == size:
                chunks.append((lo, lo + filled, current))
                current, lo, filled = [], lo + filled, 0
    if current:
        chunks.append((lo, lo + filled, current))
    return chunks


class ObserveGraphs:
    """Bucketed static buffers for `context_kv` and, with `capture`, a CUDA graph per bucket.

    Args:
        drafter: the drafter, on its final device, with its final weights.
        capture: capture CUDA graphs (needs the drafter on CUDA); default: whether it is. Without
            it (the CPU) the same projection runs eagerly on the bucketed buffers.

    Attributes:
        replays: graph replays so far.

    Raises:
        ValueError: `capture` with the drafter off CUDA.
    """

    def __init__(self, drafter: DSparkDrafter, capture: bool | None = None) -> None:
        device = drafter.cos_sin.device
        capture = device.type == "cuda" if capture is None else capture
        if capture and device.type != "cuda":
            raise ValueError(f"capture: CUDA graphs need the drafter on CUDA, it is on {device}")
        self.drafter, self.capture, self.device = drafter, capture, device
        self.pool = torch.cuda.graph_pool_handle() if capture else None
        self.buffers: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.graphs: dict[int, torch.cuda.CUDAGraph] = {}
        self.outputs: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.replays = 0

    @staticmethod
    def fits(rows: int) -> bool:
        """Whether a step of `rows` committed positions has a bucket."""
        return 1 <= rows and observe_bucket(rows) is not None

    @torch.no_grad()
    def run(self, features: torch.Tensor, positions: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """`drafter.context_kv(features, positions)` through the bucket of n = len(positions).

        Args:
            features: `[n, m*d]` target features (any float dtype, any device).
            positions: n absolute positions, each < `max_position_embeddings`.

        Returns:
            `(k, v)`, each `[L, n, H_kv, D]` in the drafter dtype: views of the bucket's outputs,
            valid until the next `run` of the same bucket (copy them before that).

        Raises:
            ValueError: no bucket holds n rows, or `features` has another row count.
        """
        rows = len(positions)
        if not self.fits(rows) or features.shape[0] != rows:
            raise ValueError(f"positions: {rows} rows ({features.shape[0]} feature rows) fit no bucket "
                             f"(1..{OBSERVE_BUCKETS[-1]})")
        size = observe_bucket(rows)
        feats, pos = self._buffers(size)
        feats[:rows].copy_(features)
        host = torch.tensor(list(positions), dtype=torch.int64)
        # Pinned and non-blocking: a pageable copy would wait for every kernel already queued.
        cuda = self.device.type == "cuda"
        pos[:rows].copy_(host.pin_memory() if cuda else host, non_blocking=cuda)
        if not self.capture:
            k, v = self.drafter.context_kv(feats, pos)
        else:
            self._capture(size)
            self.graphs[size].replay()
            self.replays += 1
            k, v = self.outputs[size]
        return k[:, :rows], v[:, :rows]

    @torch.no_grad()
    def capture_all(self) -> int:
        """Captures every bucket's graph before serving (largest first, sharing the pool), so no
        step pays a capture mid-serving: a flush after a long pause projects hundreds of rows
        through a bucket rarely used. Returns the graphs captured (0 without `capture`)."""
        if not self.capture:
            return 0
        missing = [size for size in reversed(OBSERVE_BUCKETS) if size not in self.graphs]
        for size in missing:
            self._capture(size)
        return len(missing)

    def _buffers(self, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The bucket's static `(features [size, m*d], positions [size])`, zeroed when made."""
        if size not in self.buffers:
            cfg = self.drafter.config
            self.buffers[size] = (torch.zeros((size, cfg.feature_size), dtype=self.drafter.dtype, device=self.device),
                                  torch.zeros(size, dtype=torch.int64, device=self.device))
        return self.buffers[size]

    def _capture(self, size: int) -> None:
        """Captures the bucket's graph unless it has one."""
        if size not in self.graphs:
            feats, pos = self._buffers(size)
            self.graphs[size], self.outputs[size] = capture_graph(
                lambda: self.drafter.context_kv(feats, pos), self.device, self.pool)
