# Session 6, call 4: after the chat-template cache and the cheaper PendingContext flush:
# structured output (batch 1 and 64) and the paused DSpark engine (random-weight target as run 7).
source tools/gpu_env.sh >/dev/null 2>&1
timeout 120 python3 packages/deepinfer-core/benchmarks/structured_overhead.py --random-weights .cache/smol_tok \
  --device cuda --dtype bfloat16 --batch 1 64 --tokens 64 --repeats 3 --settle --timeline > $OUT/structured.txt 2>&1
grep -v Writing $OUT/structured.txt | tail -5
T=$(python3 -c "import sys; sys.path.insert(0,'packages/deepinfer-core/benchmarks'); from structured_overhead import random_checkpoint; from pathlib import Path; print(random_checkpoint(Path('.cache/smol_tok')))" 2>/dev/null | tail -1)
timeout 120 deepinfer-dspark train --target $T --out ~/drafter --num-prompts 64 --max-new-tokens 32 --steps 20 --num-calibration-prompts 8 > $OUT/train.log 2>&1; tail -1 $OUT/train.log
python3 -c "
from deepinfer_dspark.sps import SPSProfile
SPSProfile([1, 2, 512], [300.0, 1000.0, 100.0], {'method': 'hand-made: plain decoding slow at batch 1 only'}).save('$OUT/sps.json')
SPSProfile([4, 8, 2048], [200.0, 190.0, 10.0], {'method': 'hand-made'}).save('$OUT/spec_sps.json')"
timeout 260 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter --max-tokens 128 \
  --concurrency 64 128 256 --fixed 3 --variants none confidence --sps $OUT/sps.json --spec-sps $OUT/spec_sps.json \
  --profile $OUT/dspark_profile.txt --out $OUT/dspark.md > $OUT/bench.log 2>&1
grep -v "^|" $OUT/bench.log | tail -7
