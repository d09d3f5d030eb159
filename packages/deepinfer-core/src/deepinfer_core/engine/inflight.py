# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The asynchronous engine's launched steps whose sampled ids the host has not read yet."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch

from deepinfer_core.engine.request import Request
from deepinfer_core.structured.masks import FillJob, TokenBitmask


@dataclasses.dataclass
class InflightStep:
    """A launched step whose sampled ids have not been read on the host.

    Attributes:
        requests: the sampling requests, in row order of `sampled`.
        out_index: per request, the index of its placeholder in `output_token_ids`.
        sampled: `[B]` int64 ids on the device (rows for the next step's `fill_row`).
        host: `[B]` int64 pinned host copy (valid once `ready` has completed).
        ready: CUDA event recorded after the copy; None off CUDA (the copy is already done).
        accept: the grammars of structured requests still have to consume these ids.
    """

    requests: list[Request]
    out_index: list[int]
    sampled: torch.Tensor
    host: torch.Tensor
    ready: torch.cuda.Event | None
    accept: bool = False


@dataclasses.dataclass
class DeferredSample:
    """A launched step whose grammar rows wait for their masks (the mask thread fills them).

    Attributes:
        requests, out_index: as in `InflightStep`.
        draw: applies the masks and samples (`Sampler.prepare_ids`): `[B]` ids on the device.
        filling: the mask thread's job (`StructuredOutputManager.start_fill`).
    """

    requests: list[Request]
    out_index: list[int]
    draw: Callable[[TokenBitmask | None], torch.Tensor]
    filling: FillJob
