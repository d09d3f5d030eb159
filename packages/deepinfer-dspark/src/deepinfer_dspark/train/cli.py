# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""`deepinfer-dspark train | calibrate`: train a small DSpark drafter for a target, offline.

    deepinfer-dspark train --out drafter/                    # the engine's default SmolLM2-135M
    deepinfer-dspark train --target model.gguf --out drafter/ --steps 1000
    deepinfer-dspark calibrate --drafter drafter/            # refit calibration.json

`train` (1) turns `--num-prompts` + `--num-calibration-prompts` stdlib docstrings into chat
prompts, (2) has the target answer them in the engine (`deepinfer_core.LLM`), (3) trains the
drafter on the training replies (`DraftTrainer`), (4) saves a DeepSpec checkpoint folder,
(5) fits STS on greedy rollouts over the held-out replies (`calibration.json`) and (6) writes
`training.json` (settings, loss history, calibration report). Serve it with
`LLM(target, speculative_config={"method": "dspark", "model": OUT, "num_speculative_tokens": k,
"calibration": OUT + "/calibration.json"})`, k <= block size.

Defaults are sized for SmolLM2-135M-Instruct on one H200 in under 15 minutes. Measured there
(packages/deepinfer-dspark/BENCHMARKS.md): with the defaults (2,048 prompts, 16 sequences a step)
and `--max-train-seconds 200`, 2,611 steps at 13 steps/s and 269 s in all; with `--num-prompts
4096 --batch-size 64 --max-train-seconds 370`, 1,576 steps at 4.3 steps/s and 480 s in all
(generation of the replies, training, calibration and start-up), held-out acceptance 1.82 of 7;
with `--num-prompts 5200 --batch-size 64 --max-train-seconds 330` and the blocks' grouped
attention (session 37), 4,550+ steps at 14.2 steps/s and 428 s in all, held-out 2.48 of 7; the
same with `--num-prompts 10400 --prompts-per-docstring 2` (the same docstrings, twice the replies;
session 38), 4,243 steps and 474 s in all, held-out 3.12 of 7.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

import torch
from deepinfer_core import LLM

from deepinfer_dspark.checkpoint import load_checkpoint
from deepinfer_dspark.train.calibrate import CALIBRATION_FILE, calibrate_checkpoint
from deepinfer_dspark.train.data import (TEMPLATES, build_prompts, docstrings_needed, generate_sequences,
                                         stdlib_docstrings, unused_special_token)
from deepinfer_dspark.train.features import TargetModel, default_target_layer_ids, load_hf_target
from deepinfer_dspark.train.losses import LossWeights
from deepinfer_dspark.train.model import drafter_config, init_drafter, save_checkpoint
from deepinfer_dspark.train.trainer import DraftTrainer, TrainConfig

REPORT_FILE = "training.json"


def _layer_ids(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--target-layer-ids: expected comma-separated ints, got {text!r}") from exc


def _data_args(p: argparse.ArgumentParser, num_prompts: int) -> None:
    p.add_argument("--target", default=None, help="target .gguf file or HF folder; None: the engine's "
                   "default model, SmolLM2-135M-Instruct")
    p.add_argument("--num-prompts", type=int, default=num_prompts,
                   help="prompts to generate on (stdlib docstrings in instruction templates; "
                        "train: --prompts-per-docstring of them a docstring)")
    p.add_argument("--max-new-tokens", type=int, default=256, help="reply length cap")
    p.add_argument("--max-prompt-chars", type=int, default=1500, help="docstrings are cut to this length")
    p.add_argument("--temperature", type=float, default=0.0, help="reply sampling temperature (0: greedy)")
    p.add_argument("--max-num-seqs", type=int, default=256, help="engine batch size while generating")
    p.add_argument("--device", default="auto", help="torch device (auto: cuda when available)")
    p.add_argument("--seed", type=int, default=0, help="prompt shuffle, sampling and training seed")


def build_parser() -> argparse.ArgumentParser:
    """The `deepinfer-dspark` argument parser."""
    parser = argparse.ArgumentParser(prog="deepinfer-dspark", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    defaults = argparse.ArgumentDefaultsHelpFormatter
    train = sub.add_parser("train", help="generate data, train a drafter, calibrate it", formatter_class=defaults,
                           description="Generates the target's replies to docstring prompts, trains a drafter "
                                       "on them and calibrates it (calibration.json; no separate `calibrate` "
                                       "step needed). On a CPU keep it tiny, e.g. --num-prompts 16 "
                                       "--max-new-tokens 16 --steps 5 --num-calibration-prompts 4 (minutes).")
    _data_args(train, 2048)
    train.add_argument("--out", required=True, default=argparse.SUPPRESS, help="checkpoint folder to write")
    train.add_argument("--prompts-per-docstring", type=int, default=1,
                       help=f"training prompts made from each docstring, each in another instruction template "
                            f"(1-{len(TEMPLATES)}); held-out docstrings are never trained on")
    train.add_argument("--num-calibration-prompts", type=int, default=128, help="held-out prompts for STS (0: skip)")
    train.add_argument("--calibration-temperature", type=float, default=0.0,
                       help="the held-out replies' sampling temperature (0: greedy, as served by default); "
                            "--temperature samples only the training replies, so held-out acceptance stays comparable")
    train.add_argument("--steps", type=int, default=3000, help="optimizer steps (at most)")
    train.add_argument("--max-train-seconds", type=float, default=None,
                       help="stop training after this many seconds; the cosine learning-rate schedule then "
                            "spans the steps expected to fit (at most --steps; the steps run are recorded)")
    train.add_argument("--batch-size", type=int, default=16, help="sequences per step")
    train.add_argument("--anchors", type=int, default=32, help="draft blocks per sequence per step")
    train.add_argument("--lr", type=float, default=6e-4, help="peak learning rate (warmup, then cosine to 0)")
    train.add_argument("--block-size", type=int, default=7, help="draft block size (max speculative tokens)")
    train.add_argument("--layers", type=int, default=2, help="draft decoder layers")
    train.add_argument("--markov-rank", type=int, default=256, help="rank of the Markov head (0: none)")
    train.add_argument("--target-layer-ids", type=_layer_ids, default=None,
                       help="comma-separated target layers (default: 5 spread from 1 to L-3)")
    train.add_argument("--mask-token-id", type=int, default=None, help="default: an unused special token")
    train.add_argument("--precision", choices=("auto", "bf16", "fp32"), default="auto",
                       help="bf16 autocast on CUDA with auto; float32 master weights always")
    train.add_argument("--calibration-anchors", type=int, default=16, help="rollouts per held-out reply")
    train.add_argument("--log-every", type=int, default=50, help="steps between log lines")
    train.add_argument("--no-target-cache", action="store_true",
                       help="run the target every step instead of caching its features and last hidden "
                            "states once per sequence (TrainConfig.cache_target)")
    cal = sub.add_parser("calibrate", help="refit calibration.json for a trained drafter (train already fits it)",
                         formatter_class=defaults)
    _data_args(cal, 128)
    cal.add_argument("--drafter", required=True, help="checkpoint folder (calibration.json is written there)")
    cal.add_argument("--prompt-offset", type=int, default=None,
                     help="skip this many docstrings (default: the drafter's training docstrings, from training.json)")
    cal.add_argument("--anchors", type=int, default=16, help="rollouts per held-out reply")
    cal.set_defaults(seed=None, max_prompt_chars=None)   # the training run's (training.json), else 0 and 1500
    return parser


def _device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        return torch.device(name)
    except RuntimeError as exc:
        raise ValueError(f"--device: not a torch device: {name!r}") from exc


# flag -> smallest allowed value, checked before any work (flags left unset are skipped).
_MINIMUMS = {"num_prompts": 1, "prompts_per_docstring": 1, "max_new_tokens": 1,
             "max_prompt_chars": 1, "max_num_seqs": 1,
             "num_calibration_prompts": 0, "layers": 1, "block_size": 1, "markov_rank": 0, "mask_token_id": 0,
             "anchors": 1, "calibration_anchors": 1, "prompt_offset": 0, "temperature": 0,
             "calibration_temperature": 0}


def _check_flags(args: argparse.Namespace) -> torch.device:
    """Validates the flags the slow steps use only later; returns the device.

    Raises:
        ValueError: a flag below its minimum, an empty `--target-layer-ids`, a `--drafter` that is
            not a checkpoint folder, or a bad `--device` (the message names the flag).
    """
    for name, minimum in _MINIMUMS.items():
        value = getattr(args, name, None)
        if value is not None and value < minimum:
            raise ValueError(f"--{name.replace('_', '-')}: must be >= {minimum}, got {value}")
    if getattr(args, "prompts_per_docstring", 1) > len(TEMPLATES):
        raise ValueError(f"--prompts-per-docstring: must be <= {len(TEMPLATES)} (the instruction templates), "
                         f"got {args.prompts_per_docstring}")
    if args.command == "train" and args.target_layer_ids is not None and not args.target_layer_ids:
        raise ValueError("--target-layer-ids: need at least one layer id")
    if args.command == "calibrate" and not (Path(args.drafter) / "config.json").is_file():
        raise ValueError(f"--drafter: {args.drafter} is not a drafter checkpoint folder (no config.json)")
    return _device(args.device)


def _log(message: str) -> None:
    print(f"[deepinfer-dspark] {message}", file=sys.stderr, flush=True)


def _generate(args: argparse.Namespace, device: torch.device, prompt_sets: list[list[str]],
              temperatures: list[float]):
    """Target replies for each prompt set, sampled at its temperature (0: greedy); returns
    (sequences per set, target path, tokenizer)."""
    gpu = device.type != "cpu"
    engine = dict(dtype="bfloat16" if gpu else "float32", device=str(device), max_num_seqs=args.max_num_seqs,
                  seed=args.seed)
    if gpu:
        engine.update(kv_cache_memory=8 << 30, max_num_batched_tokens=8192)
    llm = LLM(args.target, **engine)
    sets = []
    for prompts, temperature in zip(prompt_sets, temperatures, strict=True):
        start = time.time()
        seqs = generate_sequences(llm, prompts, args.max_new_tokens, temperature=temperature, seed=args.seed)
        tokens = sum(s.reply_len for s in seqs)
        _log(f"generated {len(seqs)}/{len(prompts)} replies, {tokens} tokens in {time.time() - start:.1f} s")
        sets.append(seqs)
    path, tokenizer = Path(llm.model_path), llm.get_tokenizer()
    del llm
    gc.collect()
    if gpu and torch.cuda.is_available():
        torch.cuda.empty_cache()
    return sets, path, tokenizer


def _load_target(path: Path, device: torch.device, layer_ids: tuple[int, ...] | None) -> TargetModel:
    dtype = torch.float32 if device.type == "cpu" else torch.bfloat16
    model = load_hf_target(path, dtype, device)
    ids = layer_ids or default_target_layer_ids(int(model.config.num_hidden_layers))
    return TargetModel(model, ids)


def run_train(args: argparse.Namespace) -> dict:
    """The `train` command; returns the report written to `training.json`."""
    start, device = time.time(), _check_flags(args)
    train_cfg = TrainConfig(steps=args.steps, batch_size=args.batch_size, anchors_per_sequence=args.anchors,
                            lr=args.lr, precision=args.precision, seed=args.seed, loss=LossWeights(),
                            log_every=args.log_every, cache_target=not args.no_target_cache)   # validated early
    train_docs = docstrings_needed(args.num_prompts, args.prompts_per_docstring)
    docs = stdlib_docstrings(train_docs + args.num_calibration_prompts, seed=args.seed,
                             max_chars=args.max_prompt_chars)
    if len(docs) < train_docs + args.num_calibration_prompts:
        hint = (f"; raise --prompts-per-docstring (at most {len(TEMPLATES)})"
                if args.prompts_per_docstring < len(TEMPLATES) and args.num_calibration_prompts < len(docs) else "")
        raise ValueError(f"--num-prompts / --num-calibration-prompts: {args.num_prompts} training prompts at "
                         f"{args.prompts_per_docstring} a docstring and {args.num_calibration_prompts} held out need "
                         f"{train_docs + args.num_calibration_prompts} docstrings; this Python's standard library "
                         f"has {len(docs)}{hint}")
    train_prompts = build_prompts(docs[:train_docs], args.prompts_per_docstring)[:args.num_prompts]
    held_prompts = build_prompts(docs)[train_docs:]   # one a docstring, as `calibrate` builds them
    (train_seqs, held_out), path, tokenizer = _generate(
        args, device, [train_prompts, held_prompts], [args.temperature, args.calibration_temperature])
    target = _load_target(path, device, args.target_layer_ids)
    mask = args.mask_token_id if args.mask_token_id is not None else unused_special_token(
        tokenizer, train_seqs + held_out, target.vocab_size)
    config = drafter_config(target.config, num_layers=args.layers, block_size=args.block_size,
                            target_layer_ids=target.target_layer_ids, mask_token_id=mask,
                            markov_rank=args.markov_rank, num_anchors=args.anchors)
    drafter = init_drafter(config, target.embed_weight, target.lm_head_weight, seed=args.seed, device=device)
    _log(f"training {sum(p.numel() for p in drafter.parameters() if p.requires_grad) / 1e6:.1f} M parameters on "
         f"{len(train_seqs)} sequences; target layers {list(target.target_layer_ids)}, mask token {mask}")
    cache_start = time.time()
    trainer = DraftTrainer(drafter, target, train_seqs, train_cfg)
    cached = trainer.cache is not None
    _log(f"target features and last hidden states cached once per sequence in {time.time() - cache_start:.1f} s"
         if cached else "target run every step (--no-target-cache)" if args.no_target_cache
         else "target run every step (its cache would take over half the free memory)")
    train_start = time.time()
    history = trainer.train(
        on_log=lambda e: _log(f"step {e['step']}/{args.steps} loss {e['loss']:.4f} ce {e['ce']:.3f} "
                              f"tv {e['tv']:.3f} conf {e['conf']:.3f} accept {e['acceptance']:.3f} "
                              f"[{time.time() - train_start:.0f} s, {e['step'] / max(time.time() - train_start, 1e-9):.3g} steps/s]"),
        max_seconds=args.max_train_seconds)
    train_time = time.time() - train_start
    trainer.cache = None   # its device memory back before calibration
    out = save_checkpoint(drafter, config, args.out)
    del drafter
    calibration = None
    if held_out:
        served = load_checkpoint(out, dtype=target.dtype, device=device)
        calibration = calibrate_checkpoint(out, served, target, held_out, args.calibration_anchors, args.seed)
        _log(f"calibration: mean accepted {calibration['mean_accepted']:.2f} of {args.block_size} drafts, "
             f"temperatures {[round(t, 3) for t in calibration['temperatures']]}")
    report = {"target": str(path), "device": str(device), "args": vars(args),
              "num_train_sequences": len(train_seqs), "num_held_out_sequences": len(held_out),
              "steps_run": history[-1]["step"] if history else 0, "target_cache": cached, "history": history,
              "calibration": calibration,
              "seconds": {"train": round(train_time, 1), "total": round(time.time() - start, 1)}}
    (out / REPORT_FILE).write_text(json.dumps(report, indent=2) + "\n")
    _log(f"wrote {out} in {report['seconds']['total']} s")
    return report


def run_calibrate(args: argparse.Namespace) -> dict:
    """The `calibrate` command; returns the calibration report."""
    device, folder = _check_flags(args), Path(args.drafter)
    trained = json.loads((folder / REPORT_FILE).read_text()).get("args", {}) if (folder / REPORT_FILE).is_file() else {}
    if args.target is None and "target" in trained:
        args.target = trained["target"]
    if args.prompt_offset is None and (folder / REPORT_FILE).is_file() and "num_prompts" not in trained:
        raise ValueError(f"--prompt-offset: {folder / REPORT_FILE} does not say which docstrings trained the "
                         f"drafter; pass the number to skip")   # (no training.json: not trained here, skip none)
    offset = args.prompt_offset if args.prompt_offset is not None else docstrings_needed(
        int(trained.get("num_prompts", 0)), int(trained.get("prompts_per_docstring", 1)))
    # The training run's shuffle and cut, unless given: else the held-out docstrings differ.
    for name, default in (("seed", 0), ("max_prompt_chars", 1500)):
        if getattr(args, name) is None:
            setattr(args, name, trained.get(name, default))
    docs = stdlib_docstrings(offset + args.num_prompts, seed=args.seed, max_chars=args.max_prompt_chars)
    (held_out,), path, _ = _generate(args, device, [build_prompts(docs)[offset:]], [args.temperature])
    config = json.loads((folder / "config.json").read_text())
    target = _load_target(path, device, tuple(config["target_layer_ids"]))
    drafter = load_checkpoint(folder, dtype=target.dtype, device=device, target_embed=target.embed_weight,
                              target_lm_head=target.lm_head_weight)   # a checkpoint may omit both
    report = calibrate_checkpoint(folder, drafter, target, held_out, args.anchors, args.seed)
    _log(f"wrote {folder / CALIBRATION_FILE}: mean accepted {report['mean_accepted']:.2f}, "
         f"temperatures {[round(t, 3) for t in report['temperatures']]}")
    return report


def main(argv: list[str] | None = None) -> int:
    """Console entry point `deepinfer-dspark`."""
    args = build_parser().parse_args(argv)
    if args.command == "train":
        run_train(args)
    else:
        run_calibrate(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
