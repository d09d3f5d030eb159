# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Per-step attention metadata, passed explicitly from the runner to every attention layer."""

from __future__ import annotations

import dataclasses

import torch


@dataclasses.dataclass(frozen=True)
class AttentionMetadata:
    """Where this step's tokens live in the paged KV cache and what each query may see.

    Attributes:
        slot_mapping: `[T]` int64, cache slot (`block_id * block_size + offset`) of each token
            of the step; a negative slot is skipped by `ops.store_kv_cache`.
        block_tables: `[B, M]` int32, each request's block ids, right-padded with 0.
        cu_seqlens_q: `[B+1]` int32, prefix sums of the requests' query lengths in this step.
        seq_lens: `[B]` int32, tokens in the cache per request after this step's tokens are
            stored (cached prefix + this step's tokens).
        max_query_len: longest query length in the step.
        is_decode_only: every request has exactly one query token (T == B).
    """

    slot_mapping: torch.Tensor
    block_tables: torch.Tensor
    cu_seqlens_q: torch.Tensor
    seq_lens: torch.Tensor
    max_query_len: int
    is_decode_only: bool
