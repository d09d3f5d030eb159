# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""DraftTrainer: fits a DSpark drafter to the target on the target's own generations.

One step (DSpark, Cheng et al. 2026, section 5, scaled down): draw `batch_size` sequences, take
the frozen target's features and logits over them (from `TargetCache`, filled once, or by running
the target), draw random anchors in each
(`blocks.sample_anchors`), build the teacher-forced blocks, run the drafter's parallel backbone
with every block's context K/V taken from its own sequence's features before the anchor, and
minimise `losses.dspark_loss`. AdamW, linear warmup then cosine decay to zero, gradient clipping.

Precision: float32 on CPU; on CUDA bf16 autocast by default (master weights and optimizer state
stay float32). The drafter's RMSNorms receive float32 inputs under autocast (a forward pre-hook):
`ops.rms_norm` wants its input in the weight's dtype and computes in float32 anyway.
Kernels: every `deepinfer_kernels.ops` call of the drafter runs the pure-torch `reference`
backend during training (environment override, restored afterwards), because the fused GPU
kernels have no backward; the first step checks that every trainable tensor got a gradient.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import torch

from deepinfer_dspark.drafter import DSparkDrafter, RMSNorm
from deepinfer_dspark.train.blocks import BlockBatch, build_blocks, pad_batch, sample_anchors
from deepinfer_dspark.train.data import TrainingSequence
from deepinfer_dspark.train.features import TargetModel
from deepinfer_dspark.train.grouped_blocks import grouped_hidden
from deepinfer_dspark.train.losses import LossOutput, LossWeights, dspark_loss
from deepinfer_dspark.train.target_cache import TargetCache

KERNEL_BACKEND_ENV = "DEEPINFER_KERNEL_BACKEND"   # documented in deepinfer_kernels.ops
PRECISIONS = ("auto", "bf16", "fp32")


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings (defaults sized for SmolLM2-135M on one H200; see the CLI doc).

    Attributes:
        steps: optimizer steps.
        batch_size: sequences per step.
        anchors_per_sequence: blocks drawn from each sequence per step.
        lr: peak learning rate (DeepSpec: 6e-4).
        warmup_ratio: fraction of the steps with linear warmup (DeepSpec: 4%).
        weight_decay: AdamW decoupled weight decay.
        betas: AdamW betas.
        grad_clip: max global gradient norm (<= 0 disables).
        precision: "auto" (bf16 autocast on CUDA, fp32 elsewhere), "bf16" or "fp32".
        seed: seeds the batch and anchor draws.
        loss: loss weights and the position decay.
        log_every: steps between history entries.
        cache_target: compute the target's features and last hidden states once per sequence
            (`TargetCache`) instead of running the target every step; skipped (with the same
            results up to rounding) when the cache would take more than half the free device
            memory.
        grouped_attention: run a sequence's blocks side by side in one attention call over its
            context (`grouped_blocks`), instead of one copy of the context per block (the
            engine's layout, `DSparkDrafter.forward`); the same loss up to rounding.
    """

    steps: int = 3000
    batch_size: int = 16
    anchors_per_sequence: int = 32
    lr: float = 6e-4
    warmup_ratio: float = 0.04
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.95)
    grad_clip: float = 1.0
    precision: str = "auto"
    seed: int = 0
    loss: LossWeights = field(default_factory=LossWeights)
    log_every: int = 50
    cache_target: bool = True
    grouped_attention: bool = True

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "anchors_per_sequence", "log_every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < (0 if name == "steps" else 1):
                raise ValueError(f"{name}: must be an int >= {0 if name == 'steps' else 1}, got {value!r}")
        if not self.lr > 0:
            raise ValueError(f"lr: must be > 0, got {self.lr}")
        if not 0 <= self.warmup_ratio < 1:
            raise ValueError(f"warmup_ratio: must be in [0, 1), got {self.warmup_ratio}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision: {self.precision!r} not in {PRECISIONS}")


def lr_factor(step: int, total: int, warmup_ratio: float) -> float:
    """Multiplier of the peak lr at `step` (0-based): linear warmup, then cosine to 0."""
    warmup = max(1, math.ceil(total * warmup_ratio))
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))


@contextlib.contextmanager
def reference_kernels() -> Iterator[None]:
    """Runs every `deepinfer_kernels.ops` call on the differentiable `reference` backend."""
    previous = os.environ.get(KERNEL_BACKEND_ENV)
    os.environ[KERNEL_BACKEND_ENV] = "reference"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(KERNEL_BACKEND_ENV, None)
        else:
            os.environ[KERNEL_BACKEND_ENV] = previous


@contextlib.contextmanager
def float32_norm_inputs(model: torch.nn.Module) -> Iterator[None]:
    """Casts the input of every `RMSNorm` in `model` to float32 (for autocast, see module doc)."""
    handles = [m.register_forward_pre_hook(lambda _m, args: (args[0].float(),) + tuple(args[1:]))
               for m in model.modules() if isinstance(m, RMSNorm)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


class DraftTrainer:
    """Trains `drafter` against `target` on `sequences`.

    Args:
        drafter: a float32 `DSparkDrafter` on the target's device (embedding and LM head frozen).
        target: the frozen target (`TargetModel`) with the drafter's `target_layer_ids`.
        sequences: training sequences (each needs at least one reply token).
        config: optimisation settings.

    Raises:
        ValueError: no usable sequence, mismatched feature layers or devices, or a non-float32
            drafter (names the field).
    """

    def __init__(self, drafter: DSparkDrafter, target: TargetModel, sequences: Sequence[TrainingSequence],
                 config: TrainConfig = TrainConfig()) -> None:
        cfg = drafter.config
        if tuple(cfg.target_layer_ids) != tuple(target.target_layer_ids):
            raise ValueError(f"target_layer_ids: drafter {cfg.target_layer_ids} != target {target.target_layer_ids}")
        if drafter.dtype != torch.float32:
            raise ValueError(f"drafter: train float32 master weights, got {drafter.dtype}")
        if drafter.fc.weight.device != target.device:
            raise ValueError(f"device: drafter on {drafter.fc.weight.device}, target on {target.device}")
        self.sequences = [s for s in sequences if s.reply_len > 0]
        if not self.sequences:
            raise ValueError("sequences: no sequence has a reply token to train on")
        self.drafter, self.target, self.config = drafter, target, config
        self.device = target.device
        self.use_autocast = config.precision == "bf16" or (config.precision == "auto" and self.device.type == "cuda")
        self.params = [p for p in drafter.parameters() if p.requires_grad]
        decay = [p for p in self.params if p.dim() >= 2]
        no_decay = [p for p in self.params if p.dim() < 2]
        self.optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                                            {"params": no_decay, "weight_decay": 0.0}],
                                           lr=config.lr, betas=config.betas)
        self.generator = torch.Generator().manual_seed(config.seed)
        self.cache = TargetCache(target, self.sequences) if config.cache_target and self._cache_fits() else None
        # Every sequence's tokens in one tensor, so a batch is padded by one gather (`blocks_at`):
        # a list per sequence per step cost ~3 ms of a 70 ms step on the host (64 x 500 tokens).
        self._lengths = torch.tensor([len(s.token_ids) for s in self.sequences], dtype=torch.int64)
        self._offsets = torch.cumsum(self._lengths, 0) - self._lengths
        self._tokens = torch.tensor([t for s in self.sequences for t in s.token_ids], dtype=torch.int64)
        self.step_count = 0
        self.horizon = config.steps   # the schedule's length: `config.steps`, or what fits a time budget
        self._order: list[int] = []

    def _cache_fits(self) -> bool:
        """Whether `TargetCache` would take at most half the device's free memory (always on CPU)."""
        if self.device.type != "cuda":
            return True
        tokens = sum(len(s.token_ids) for s in self.sequences)
        width = self.target.hidden_size * (len(self.target.target_layer_ids) + 1)
        need = tokens * width * torch.empty(0, dtype=self.target.dtype).element_size()
        return need <= torch.cuda.mem_get_info(self.device)[0] // 2

    def next_indices(self) -> list[int]:
        """`batch_size` indices into `sequences`, sweeping a fresh random permutation each epoch."""
        batch = []
        while len(batch) < self.config.batch_size:
            if not self._order:
                self._order = torch.randperm(len(self.sequences), generator=self.generator).tolist()
            batch.append(self._order.pop())
        return batch

    def next_batch(self) -> list[TrainingSequence]:
        """The sequences of `next_indices`."""
        return [self.sequences[i] for i in self.next_indices()]

    def loss(self, batch: Sequence[TrainingSequence]) -> LossOutput:
        """The DSpark loss of `batch` (differentiable w.r.t. the drafter), the target run on it."""
        ids, lengths, blocks = self.blocks_of(batch)
        target = self.target(ids)
        draft_logits, conf_logits = self.forward_blocks(target.features, blocks)
        target_logits = target.logits[blocks.seq_index[:, None], blocks.target_positions]
        return dspark_loss(draft_logits, target_logits, blocks.labels, blocks.valid, conf_logits, self.config.loss)

    def loss_at(self, indices: Sequence[int]) -> LossOutput:
        """The DSpark loss of `sequences[i]` for `i` in `indices`: read from `cache` when there
        is one (the same anchors and, up to rounding, the same value as `loss`), else `loss`."""
        if self.cache is None:
            return self.loss([self.sequences[i] for i in indices])
        ids, _, blocks = self.blocks_at(indices)
        rows = self.cache.rows(torch.tensor(list(indices), dtype=torch.int64), ids.shape[1])
        features = self.cache.batch_features(rows[:, :blocks.context_len])
        draft_logits, conf_logits = self.forward_blocks(features, blocks)
        target_logits = self.cache.logits_at(rows[blocks.seq_index[:, None], blocks.target_positions])
        return dspark_loss(draft_logits, target_logits, blocks.labels, blocks.valid, conf_logits, self.config.loss)

    def blocks_of(self, batch: Sequence[TrainingSequence]) -> tuple[torch.Tensor, torch.Tensor, BlockBatch]:
        """The padded ids on the device, the lengths, and the blocks of freshly drawn anchors."""
        ids, lengths = pad_batch([s.token_ids for s in batch])
        seq_index, anchors = sample_anchors(lengths.tolist(), [s.prompt_len for s in batch],
                                            self.config.anchors_per_sequence, self.generator)
        ids = ids.to(self.device)
        cfg = self.drafter.config
        return ids, lengths, build_blocks(ids, lengths, seq_index, anchors, cfg.block_size, cfg.mask_token_id)

    def blocks_at(self, indices: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor, BlockBatch]:
        """`blocks_of` the sequences at `indices`, padded by one gather from the joined tokens
        (the same ids, lengths and anchor draws)."""
        index = torch.as_tensor(list(indices), dtype=torch.int64)
        lengths = self._lengths[index]
        cols = torch.arange(int(lengths.max()) if len(index) else 0, dtype=torch.int64)
        inside = cols[None, :] < lengths[:, None]
        where = (self._offsets[index][:, None] + cols[None, :]).clamp(max=max(self._tokens.numel() - 1, 0))
        ids = torch.where(inside, self._tokens[where], torch.zeros((), dtype=torch.int64))
        seq_index, anchors = sample_anchors(lengths.tolist(), [self.sequences[i].prompt_len for i in indices],
                                            self.config.anchors_per_sequence, self.generator)
        ids = ids.to(self.device)
        cfg = self.drafter.config
        return ids, lengths, build_blocks(ids, lengths, seq_index, anchors, cfg.block_size, cfg.mask_token_id)

    def forward_blocks(self, features: torch.Tensor, blocks: BlockBatch
                       ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Teacher-forced drafter outputs of every block.

        Args:
            features: `[B, L, m*d]` target features of the padded batch.
            blocks: the blocks cut from it.

        Returns:
            `(draft_logits [R, G, V] float32, confidence_logits [R, G] float32 or None)`.
        """
        drafter = self.drafter
        rows, width = features.shape[0], blocks.context_len
        autocast = torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.use_autocast)
        norms = float32_norm_inputs(drafter) if self.use_autocast else contextlib.nullcontext()
        with reference_kernels(), autocast, norms:
            if self.config.grouped_attention:
                hidden = grouped_hidden(drafter, features, blocks,
                                        torch.bfloat16 if self.use_autocast else drafter.dtype)
            else:
                flat = features[:, :width].reshape(rows * width, -1)
                positions = torch.arange(width, device=self.device).repeat(rows)
                keys, values = drafter.context_kv(flat, positions)               # [L, B*N, H_kv, D]
                shape = (keys.shape[0], rows, width) + tuple(keys.shape[2:])
                keys = keys.reshape(shape)[:, blocks.seq_index]                  # [L, R, N, H_kv, D]
                values = values.reshape(shape)[:, blocks.seq_index]
                visible = torch.arange(width, device=self.device)[None, :] < blocks.anchors[:, None]
                hidden = drafter(blocks.block_tokens, blocks.positions, keys, values, visible)
            logits = drafter.corrected_logits(hidden, blocks.prev_tokens)
            confidence = drafter.confidence_logits(hidden, blocks.prev_tokens)
        return logits.float(), None if confidence is None else confidence.float()

    def step(self) -> LossOutput:
        """One optimizer step on the next batch.

        Raises:
            RuntimeError: on the first step, a trainable tensor received no gradient (a
                non-differentiable kernel in the drafter's forward).
        """
        self.drafter.train()
        for group in self.optimizer.param_groups:
            group["lr"] = self.config.lr * lr_factor(self.step_count, self.horizon, self.config.warmup_ratio)
        self.optimizer.zero_grad(set_to_none=True)
        out = self.loss_at(self.next_indices())
        out.total.backward()
        if self.step_count == 0:
            missing = [n for n, p in self.drafter.named_parameters() if p.requires_grad and p.grad is None]
            if missing:
                raise RuntimeError(f"no gradient reached {missing[:4]}: a drafter op is not differentiable here")
        if self.config.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.params, self.config.grad_clip)
        self.optimizer.step()
        self.step_count += 1
        return out

    def train(self, on_log: Callable[[dict], None] | None = None, max_seconds: float | None = None) -> list[dict]:
        """Runs `config.steps` steps (fewer when `max_seconds` runs out first).

        Args:
            on_log: called with each history entry.
            max_seconds: wall-clock budget; training stops after the step that exceeds it
                (`step_count` says how many steps ran). The cosine schedule then spans the steps
                expected to fit (`horizon`: the step rate measured after the first 5% of the
                budget, which holds the warm-up's compilations, times the time left), at most
                `config.steps`, so the learning rate decays to about 0 at the deadline instead of
                being cut off mid-schedule.

        Returns:
            History entries `{"step", "lr", "loss", "ce", "tv", "conf", "acceptance", "top1"}`,
            averaged over the last `log_every` steps (and the final step's window).
        """
        history, window = [], []
        begin = time.monotonic()
        deadline = None if max_seconds is None else begin + max_seconds
        mark = None   # (time, step) from which the step rate is measured
        for _ in range(self.config.steps):
            if deadline is not None and time.monotonic() > deadline:
                break
            out = self.step()
            if deadline is not None:
                now = time.monotonic()
                if mark is None and now - begin >= 0.05 * max_seconds:
                    mark = (now, self.step_count)
                elif mark is not None and now > mark[0]:
                    rate = (self.step_count - mark[1]) / (now - mark[0])
                    expected = self.step_count + int(rate * max(0.0, deadline - now))
                    self.horizon = max(self.step_count + 1, min(self.config.steps, expected))
            window.append((float(out.total.detach()), out.ce, out.tv, out.conf, out.acceptance, out.top1))
            last = self.step_count == self.config.steps or (deadline is not None and time.monotonic() > deadline)
            if self.step_count % self.config.log_every == 0 or last:
                means = [sum(column) / len(window) for column in zip(*window)]
                entry = {"step": self.step_count, "lr": self.optimizer.param_groups[0]["lr"],
                         **dict(zip(("loss", "ce", "tv", "conf", "acceptance", "top1"), means))}
                history.append(entry)
                if on_log is not None:
                    on_log(entry)
                window = []
        self.drafter.eval()
        return history
