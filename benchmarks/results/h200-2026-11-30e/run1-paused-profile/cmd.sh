# Session 8, call 1: where the paused DSpark engine's 7-20% goes. Random-weight SmolLM2-shaped
# target, 20-step drafter, hand-made profiles under which drafting pays at batch 1 only (the
# confidence engine pauses every round at 64+ requests, never retired). One engine per variant;
# a cProfile of the engine thread and a torch.profiler op table (device time) of one more run at
# 256 requests per variant.
source tools/gpu_env.sh >/dev/null 2>&1
T=$(python3 -c "import sys; sys.path.insert(0,'packages/deepinfer-core/benchmarks'); from structured_overhead import random_checkpoint; from pathlib import Path; print(random_checkpoint(Path('.cache/smol_tok')))" 2>/dev/null | tail -1)
timeout 100 deepinfer-dspark train --target $T --out ~/drafter --num-prompts 64 --max-new-tokens 32 --steps 20 --num-calibration-prompts 8 > /dev/null 2>&1
python3 -c "
from deepinfer_dspark.sps import SPSProfile
SPSProfile([1, 2, 512], [300.0, 1000.0, 100.0], {'method': 'hand-made'}).save('$OUT/sps.json')
SPSProfile([4, 8, 2048], [200.0, 190.0, 10.0], {'method': 'hand-made'}).save('$OUT/spec_sps.json')"
timeout 240 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter --max-tokens 128 \
  --concurrency 64 256 --fixed 3 --variants none confidence --kv-cache-gib 8 \
  --sps $OUT/sps.json --spec-sps $OUT/spec_sps.json --profile $OUT/profile.txt --torch-profile $OUT/torch_profile.txt \
  --out $OUT/dspark.md > $OUT/bench.log 2>&1
grep -v "^|" $OUT/bench.log | grep -v "USDT\|profiler" | tail -8
