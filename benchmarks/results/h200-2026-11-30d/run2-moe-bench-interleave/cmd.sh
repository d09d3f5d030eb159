# Session 7, call 2: bench_ops' fused_moe rows with the TMA bucket (the table of BENCHMARKS.md),
# the extra-stage TMA variants at T=4096, then the paused DSpark engine interleaved with the
# plain one (5 paired rounds per concurrency, all engines alive; run-7 setup: random-weight
# SmolLM2-shaped target, 20-step drafter, hand-made profiles under which drafting pays at
# batch 1 only, so at 64-256 requests the confidence engine pauses every round, never retired).
source tools/gpu_env.sh >/dev/null 2>&1
cd packages/deepinfer-kernels
timeout 120 python3 benchmarks/bench_ops.py --no-reference --ops fused_moe > $OUT/bench_moe.txt 2>&1; grep -i "fused_moe\|Ceilings" $OUT/bench_moe.txt | cut -c1-230
timeout 90 python3 benchmarks/tune_moe.py --quick --tokens 4096 --shapes 64:8:1024 > $OUT/tune_quick.txt 2>&1; grep -v "^  skip" $OUT/tune_quick.txt | head -12
cd ../..
T=$(python3 -c "import sys; sys.path.insert(0,'packages/deepinfer-core/benchmarks'); from structured_overhead import random_checkpoint; from pathlib import Path; print(random_checkpoint(Path('.cache/smol_tok')))" 2>/dev/null | tail -1)
ls ~/drafter/config.json >/dev/null 2>&1 || timeout 100 deepinfer-dspark train --target $T --out ~/drafter --num-prompts 64 --max-new-tokens 32 --steps 20 --num-calibration-prompts 8 > $OUT/train.log 2>&1
python3 -c "
from deepinfer_dspark.sps import SPSProfile
SPSProfile([1, 2, 512], [300.0, 1000.0, 100.0], {'method': 'hand-made'}).save('$OUT/sps.json')
SPSProfile([4, 8, 2048], [200.0, 190.0, 10.0], {'method': 'hand-made'}).save('$OUT/spec_sps.json')"
timeout 300 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter --max-tokens 128 \
  --concurrency 64 128 256 --fixed 3 --variants none confidence --interleave 5 --kv-cache-gib 8 \
  --sps $OUT/sps.json --spec-sps $OUT/spec_sps.json --out $OUT/dspark.md > $OUT/bench.log 2>&1
grep -v "^|" $OUT/bench.log | tail -8
