# Session 12, call 9 (fresh machine, random weights; the session's last ~4 minutes): the pipeline
# session 13 will use, checked on CUDA: profiles from the engine's median steps
# (`--sps-method steps`, with the k = 1 profile), `--step-times`, and none / none-again /
# confidence / confidence-k7 / fixed-3 interleaved at 1 and 8 requests. Costs only: the drafter,
# trained 15 s on the random target's repetitive output, accepts nearly every draft.
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONPATH=$PYTHONPATH:$PWD/packages/deepinfer-core/benchmarks
T=$(python3 -c "from pathlib import Path; from structured_overhead import random_checkpoint; print(random_checkpoint(Path('.cache/smol_tok')))")
timeout 60 deepinfer-dspark train --target $T --out ~/drafter_rand --num-prompts 64 --max-new-tokens 32 \
  --num-calibration-prompts 8 --batch-size 16 --steps 40 --max-train-seconds 15 > $OUT/train.log 2>&1
tail -1 $OUT/train.log | cut -c1-200
timeout 165 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_rand \
  --max-tokens 64 --concurrency 1 8 --fixed 3 7 --variants none none-again confidence confidence-k7 fixed-3 \
  --interleave 2 --sps-sizes 1 8 --sps-repeats 1 --sps-method steps --step-times --kv-cache-gib 4 \
  --save-sps $OUT/sps.json --out $OUT/dspark.md > $OUT/bench.log 2>&1
grep -E "^[0-9]+ |profile|rror|Trace" $OUT/bench.log | cut -c1-260
