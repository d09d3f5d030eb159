# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Where one `DraftTrainer` step's time goes, on the device: the batch and its blocks, the target
(its forward, or with `TargetCache` the cache's gather and the LM head at the blocks' rows), the
drafter's teacher-forced blocks, the loss, the backward pass and the optimizer, timed apart
(synchronized), then a `torch.profiler` table of the kernels of a few steps. `--no-cache` runs
the target every step, as before session 20; `--per-block` gives each block its own copy of its
sequence's context (`TrainConfig.grouped_attention` off, as before session 37).

The sequences are random tokens of the lengths `deepinfer-dspark train` sees (a chat prompt of
`--prompt-min`..`--prompt-max` tokens and a reply of `--reply` tokens): a step's cost does not
depend on the token values. The drafter has the training CLI's default shape for the target.

Usage (GPU machine, repository root):
    python3 packages/deepinfer-dspark/benchmarks/train_step_profile.py --target MODEL.gguf
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import torch
from deepinfer_dspark.train.data import TrainingSequence
from deepinfer_dspark.train.features import TargetModel, default_target_layer_ids, load_hf_target
from deepinfer_dspark.train.losses import dspark_loss
from deepinfer_dspark.train.model import drafter_config, init_drafter
from deepinfer_dspark.train.trainer import DraftTrainer, TrainConfig

PHASES = ("batch", "target", "drafter", "loss", "backward", "optimizer")


def random_sequences(count: int, vocab: int, args: argparse.Namespace) -> list[TrainingSequence]:
    rng = random.Random(0)
    out = []
    for _ in range(count):
        prompt = rng.randint(args.prompt_min, args.prompt_max)
        out.append(TrainingSequence(tuple(rng.randrange(vocab) for _ in range(prompt + args.reply)), prompt))
    return out


def timed_step(trainer: DraftTrainer, sync) -> dict[str, float]:
    """One optimizer step, as `DraftTrainer.step` runs it (`loss_at`), with a clock between
    phases (ms); "target" is the cache's gather and LM head, or the target's forward."""
    marks = [time.perf_counter()]

    def mark() -> None:
        sync()
        marks.append(time.perf_counter())

    cfg = trainer.config
    trainer.drafter.train()
    trainer.optimizer.zero_grad(set_to_none=True)
    indices = trainer.next_indices()
    ids, _, blocks = trainer.blocks_at(indices)
    mark()
    if trainer.cache is not None:
        rows = trainer.cache.rows(torch.tensor(indices, dtype=torch.int64), ids.shape[1])
        features = trainer.cache.batch_features(rows[:, :blocks.context_len])
        target_logits = trainer.cache.logits_at(rows[blocks.seq_index[:, None], blocks.target_positions])
    else:
        target = trainer.target(ids)
        features = target.features
        target_logits = target.logits[blocks.seq_index[:, None], blocks.target_positions]
    mark()
    draft_logits, conf_logits = trainer.forward_blocks(features, blocks)
    mark()
    out = dspark_loss(draft_logits, target_logits, blocks.labels, blocks.valid, conf_logits, cfg.loss)
    mark()
    out.total.backward()
    mark()
    torch.nn.utils.clip_grad_norm_(trainer.params, cfg.grad_clip)
    trainer.optimizer.step()
    mark()
    return {name: (b - a) * 1e3 for name, a, b in zip(PHASES, marks, marks[1:])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", required=True, help="target GGUF file or HF folder")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--anchors", type=int, default=32)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--block-size", type=int, default=7)
    parser.add_argument("--prompt-min", type=int, default=80)
    parser.add_argument("--prompt-max", type=int, default=420)
    parser.add_argument("--reply", type=int, default=256)
    parser.add_argument("--steps", type=int, default=12, help="timed steps (after 3 warm-up steps)")
    parser.add_argument("--profile-steps", type=int, default=2, help="steps under torch.profiler (0: none)")
    parser.add_argument("--no-cache", action="store_true", help="run the target every step (no TargetCache)")
    parser.add_argument("--per-block", action="store_true",
                        help="one copy of the context per block (no grouped attention)")
    args = parser.parse_args()

    device = torch.device(args.device)
    dtype = torch.float32 if device.type == "cpu" else torch.bfloat16
    model = load_hf_target(args.target, dtype, device)
    target = TargetModel(model, default_target_layer_ids(int(model.config.num_hidden_layers)))
    config = drafter_config(target.config, num_layers=args.layers, block_size=args.block_size,
                            target_layer_ids=target.target_layer_ids, mask_token_id=0, num_anchors=args.anchors)
    drafter = init_drafter(config, target.embed_weight, target.lm_head_weight, device=device)
    sequences = random_sequences(4 * args.batch_size, target.vocab_size, args)
    began = time.perf_counter()
    trainer = DraftTrainer(drafter, target, sequences, TrainConfig(steps=10 ** 6, batch_size=args.batch_size,
                                                                    anchors_per_sequence=args.anchors,
                                                                    cache_target=not args.no_cache,
                                                                    grouped_attention=not args.per_block))
    print(f"target cache: {'off' if trainer.cache is None else 'filled'} "
          f"({1e3 * (time.perf_counter() - began):.0f} ms to build the trainer, {len(sequences)} sequences)")
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for _ in range(3):
        timed_step(trainer, sync)
    rows = [timed_step(trainer, sync) for _ in range(args.steps)]
    total = statistics.median(sum(r.values()) for r in rows)
    peak = torch.cuda.max_memory_allocated(device) / 2 ** 30 if device.type == "cuda" else float("nan")
    print(f"attention: {'per block' if args.per_block else 'grouped'}; peak memory {peak:.1f} GiB")
    print(f"step: median {total:.1f} ms over {args.steps} steps ({1e3 / total:.2f} steps/s), batch {args.batch_size}, "
          f"anchors {args.anchors}, tokens a sequence {args.prompt_min + args.reply}-{args.prompt_max + args.reply}")
    for name in PHASES:
        value = statistics.median(r[name] for r in rows)
        print(f"  {name:10s} {value:8.1f} ms  {100 * value / total:5.1f}%")
    if args.profile_steps and device.type == "cuda":
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(args.profile_steps):
                trainer.step()
            sync()
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=25, max_name_column_width=60))


if __name__ == "__main__":
    main()
