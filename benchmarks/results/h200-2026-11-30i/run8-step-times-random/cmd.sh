# Session 12, call 8 (fresh machine, random weights): is the profiles' measurement (the
# last-prefilled request's (finish - first token) / rounds) consistent with the engine's own step
# times under the same traffic, and what does a round verifying 1 draft cost against one verifying
# 7? A SmolLM2-shaped target with random weights (EOS almost never drawn) and a drafter trained
# 15 s on it (its drafts are rejected: costs only), profiles at 1 and 8 requests with
# `--step-times`, then none, fixed-1, fixed-7 and confidence one engine at a time.
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONPATH=$PYTHONPATH:$PWD/packages/deepinfer-core/benchmarks
T=$(python3 -c "from pathlib import Path; from structured_overhead import random_checkpoint; print(random_checkpoint(Path('.cache/smol_tok')))")
timeout 100 deepinfer-dspark train --target $T --out ~/drafter_rand --num-prompts 64 --max-new-tokens 32 \
  --num-calibration-prompts 8 --batch-size 16 --steps 40 --max-train-seconds 15 > $OUT/train.log 2>&1
tail -2 $OUT/train.log | cut -c1-200
timeout 220 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_rand \
  --max-tokens 128 --concurrency 1 8 --fixed 1 7 --variants none fixed-1 fixed-7 confidence --sps-sizes 1 8 \
  --sps-repeats 3 --step-times --save-sps $OUT/sps.json --out $OUT/dspark.md > $OUT/bench.log 2>&1
grep -E "^[0-9]+ |profile at|rror|Trace" $OUT/bench.log | cut -c1-330
