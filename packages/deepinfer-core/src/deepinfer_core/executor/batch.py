# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The runner's step input (ScheduledChunk), output (ModelOutput) and their flattening.

`prepare_inputs` turns a list of chunks into the flat tensors of one forward pass:
token ids and positions `[T]`, attention metadata, and the rows whose logits are wanted.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from deepinfer_core.executor.attention_metadata import AttentionMetadata
from deepinfer_core.executor.block_tables import PersistentBlockTables


@dataclasses.dataclass
class ScheduledChunk:
    """The tokens one request computes this step.

    Attributes:
        token_ids: tokens to compute (a prefill chunk, or one decode token).
        start_pos: position of `token_ids[0]` (= the request's num_computed_tokens).
        block_ids: the request's block table; covers `start_pos + len(token_ids)` tokens.
        sample: compute logits for the chunk's last token (the chunk reaches the end).
        prompt_logprobs: also compute logits for every position of the chunk.
        num_logits: with `sample`, how many trailing positions get logits (1 + the number of
            draft tokens at the end of the chunk when speculative decoding verifies them).
        fill_row: >= 0 when the chunk's last token is not known on the host yet (asynchronous
            scheduling): it is row `fill_row` of the previous step's sampled ids, still on the
            device (`ModelRunner.execute_model(..., fill_from=...)`); `token_ids[-1]` is a placeholder.
        request_id: the request (keys its persistent block-table row; None rebuilds the table).
    """

    token_ids: list[int]
    start_pos: int
    block_ids: list[int]
    sample: bool
    prompt_logprobs: bool = False
    num_logits: int = 1
    fill_row: int = -1
    request_id: str | None = None


@dataclasses.dataclass
class ModelOutput:
    """Logits of one step.

    Attributes:
        logits: `[sum(num_logits of chunks with sample=True), V]` float32, rows in chunk order
            (a chunk's `num_logits` trailing positions in position order).
        prompt_logits: chunk index -> `[len(chunk.token_ids), V]` float32, for chunks with
            `prompt_logprobs=True`.
        aux_hidden: `[T, len(aux_layers) * H]` target-layer features of every token of the step
            (only when the runner was asked for them), rows in chunk order.
        cu_seqlens: `B + 1` prefix sums of the chunk lengths (rows of `aux_hidden` per chunk).
    """

    logits: torch.Tensor
    prompt_logits: dict[int, torch.Tensor] = dataclasses.field(default_factory=dict)
    aux_hidden: torch.Tensor | None = None
    cu_seqlens: list[int] | None = None


@dataclasses.dataclass(frozen=True)
class StepInputs:
    """Flat tensors of one forward pass.

    Attributes:
        input_ids: `[T]` int64.
        positions: `[T]` int64.
        meta: attention metadata of the step.
        sample_indices: `[sum(num_logits of sampling chunks)]` int64, rows of the hidden states
            whose logits are wanted.
        cu_seqlens: host copy of `cu_seqlens_q` (`B+1` ints), to slice per-chunk rows.
    """

    input_ids: torch.Tensor
    positions: torch.Tensor
    meta: AttentionMetadata
    sample_indices: torch.Tensor
    cu_seqlens: list[int]


def prepare_inputs(chunks: list[ScheduledChunk], block_size: int, device: torch.device | str,
                   num_blocks: int | None = None, tables: PersistentBlockTables | None = None) -> StepInputs:
    """Flattens `chunks` into one step's tensors (vectorised with numpy, one copy to the device
    per dtype).

    Args:
        chunks: non-empty list; each chunk's block table must cover its last position.
        block_size: S, tokens per KV-cache block.
        device: where the tensors go.
        num_blocks: size of the KV pool; when given, block ids must be in `[0, num_blocks)`.
        tables: persistent block tables; when given and every chunk has a `request_id`, only the
            block ids added since the request's last step are copied (host work per step then
            grows with what changed, not with batch x blocks).

    Raises:
        ValueError: empty `chunks`, an empty chunk, a negative `start_pos`, a block table too
            short for the chunk or naming a block outside the pool (the message names the
            field and the chunk index).
    """
    if not chunks:
        raise ValueError("chunks: at least one ScheduledChunk is required")
    q_lens = np.array([len(c.token_ids) for c in chunks], dtype=np.int64)
    starts = np.array([c.start_pos for c in chunks], dtype=np.int64)
    n_logits = np.array([c.num_logits for c in chunks], dtype=np.int64)
    n_blocks = np.array([len(c.block_ids) for c in chunks], dtype=np.int64)
    seq_lens = starts + q_lens
    # Vectorised checks (host work per step must not grow with batch x blocks); name the first bad chunk.
    for bad, message in (
        (q_lens == 0, "token_ids: chunk {i} is empty"),
        ((n_logits < 1) | (n_logits > q_lens), "num_logits: chunk {i} asks for {n} rows of a {q}-token chunk"),
        (starts < 0, "start_pos: chunk {i} has negative start_pos {s}"),
        (n_blocks * block_size < seq_lens, "block_ids: chunk {i} has {b} blocks of {S}, too few for {L} tokens"),
    ):
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(message.format(i=i, n=n_logits[i], q=q_lens[i], s=starts[i], b=n_blocks[i],
                                            S=block_size, L=seq_lens[i]))

    cu = np.zeros(len(chunks) + 1, dtype=np.int64)
    np.cumsum(q_lens, out=cu[1:])
    num_tokens = int(cu[-1])
    request_of_token = np.repeat(np.arange(len(chunks)), q_lens)
    # Position of token t = its request's start + (t - first index of its request).
    positions = starts[request_of_token] + np.arange(num_tokens) - cu[:-1][request_of_token]

    width = max(len(c.block_ids) for c in chunks)
    if tables is not None and all(c.request_id is not None for c in chunks):
        block_tables = tables.gather([tables.sync(c.request_id, c.block_ids) for c in chunks], width)
    else:
        block_tables = np.zeros((len(chunks), width), dtype=np.int64)
        for i, c in enumerate(chunks):
            block_tables[i, : len(c.block_ids)] = c.block_ids
    if num_blocks is not None:
        valid = np.arange(width)[None, :] < n_blocks[:, None]
        outside = valid & ((block_tables < 0) | (block_tables >= num_blocks))
        if outside.any():
            i = int(np.argmax(outside.any(axis=1)))
            raise ValueError(f"block_ids: chunk {i} names a block outside [0, {num_blocks})")
    slot_mapping = block_tables[request_of_token, positions // block_size] * block_size + positions % block_size

    input_ids = np.fromiter((t for c in chunks for t in c.token_ids), dtype=np.int64, count=num_tokens)
    ends = cu[1:][[c.sample for c in chunks]]
    counts = n_logits[[c.sample for c in chunks]]
    # Each sampling chunk contributes rows end - num_logits .. end - 1, in order.
    sample_indices = (np.repeat(ends - counts, counts)
                      + np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts))

    slots, ids, pos, rows = _to_device([slot_mapping, input_ids, positions, sample_indices], torch.int64, device)
    tables_dev, cu_dev, lens_dev = _to_device([block_tables, cu, seq_lens], torch.int32, device)
    max_query_len = int(q_lens.max())
    meta = AttentionMetadata(slot_mapping=slots, block_tables=tables_dev, cu_seqlens_q=cu_dev, seq_lens=lens_dev,
                             max_query_len=max_query_len, is_decode_only=max_query_len == 1)
    return StepInputs(input_ids=ids, positions=pos, meta=meta, sample_indices=rows, cu_seqlens=cu.tolist())


def _to_device(arrays: list[np.ndarray], dtype: torch.dtype, device: torch.device | str) -> list[torch.Tensor]:
    """The integer `arrays` on `device` as `dtype`, in ONE host-to-device copy: packed into one
    buffer (pinned and copied without blocking on CUDA: never waits for queued kernels), each at an
    offset aligned to 16 bytes (Triton specialises kernels on pointer alignment). Returns one view
    of the buffer per array, in order and shape; on the CPU, each array as a tensor of its own. On
    a slow host each copy of its own cost ~50 us a step (pinning, cast, launch; H200 cProfiles,
    session 12)."""
    np_dtype = np.int64 if dtype == torch.int64 else np.int32
    if torch.device(device).type == "cpu":   # nothing to copy: no packing
        return [torch.from_numpy(np.ascontiguousarray(a, dtype=np_dtype)) for a in arrays]
    itemsize = torch.empty((), dtype=dtype).element_size()
    align = 16 // itemsize
    offsets, total = [], 0
    for a in arrays:
        offsets.append(total)
        total += -(-a.size // align) * align
    packed = np.zeros(max(total, 1), dtype=np_dtype)
    for a, offset in zip(arrays, offsets):
        packed[offset:offset + a.size] = a.reshape(-1)
    t = torch.from_numpy(packed)
    t = t.pin_memory().to(device, non_blocking=True) if torch.device(device).type == "cuda" else t.to(device)
    return [t[offset:offset + a.size].view(a.shape) for a, offset in zip(arrays, offsets)]
