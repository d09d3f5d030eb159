# Session 8, call 6: confidence scheduling with step times measured while serving
# (`MeasuredRates`) and the plain-Python schedule of small rounds, on the random-weight target
# with a 20-step drafter (it accepts ~4 tokens a round at 1 request, ~1.4-1.7 at 8 or more).
# Profiles measured here (no hand-made ones). No speculation, confidence scheduling and fixed
# k = 3, all engines alive, 3 paired rounds per concurrency.
source tools/gpu_env.sh >/dev/null 2>&1
T=$(python3 -c "import sys; sys.path.insert(0,'packages/deepinfer-core/benchmarks'); from structured_overhead import random_checkpoint; from pathlib import Path; print(random_checkpoint(Path('.cache/smol_tok')))" 2>/dev/null | tail -1)
timeout 80 deepinfer-dspark train --target $T --out ~/drafter --num-prompts 64 --max-new-tokens 32 --steps 20 --num-calibration-prompts 8 > /dev/null 2>&1
timeout 230 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter --max-tokens 128 \
  --concurrency 1 8 64 256 --fixed 3 --variants none confidence fixed-3 --interleave 3 --kv-cache-gib 8 \
  --save-sps $OUT/sps.json --out $OUT/dspark.md > $OUT/bench.log 2>&1
grep -v "^|" $OUT/bench.log | grep -v "USDT\|_warn" | tail -12
