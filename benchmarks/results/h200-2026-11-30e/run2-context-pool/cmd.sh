# Session 8, call 2: the paged context pool (`ContextPool`) on CUDA. The DSpark tests that touch
# it (graphs re-captured after the pool grows), then on the random-weight target with a 20-step
# drafter and hand-made profiles: fixed k against no speculation at 1, 8 and 32 requests (3
# paired rounds; session 7 run 6 measured 1.55 / 0.36 / 0.29 for fixed-3 before the pool), and
# the paused confidence engine at 64 and 256 requests, buffering the features while paused
# (`confidence`) or projecting them every step (`confidence-direct`), 5 paired rounds.
source tools/gpu_env.sh >/dev/null 2>&1
D=packages/deepinfer-dspark/tests
timeout 120 python3 -m pytest -q -rf --tb=short -n 6 $D/test_context_pool.py $D/test_draft_graph.py $D/test_observe_graph.py \
  $D/test_observe_batch.py $D/test_engine_proposers.py $D/test_drafter_model.py -p no:cacheprovider > $OUT/tests.txt 2>&1; tail -2 $OUT/tests.txt
T=$(python3 -c "import sys; sys.path.insert(0,'packages/deepinfer-core/benchmarks'); from structured_overhead import random_checkpoint; from pathlib import Path; print(random_checkpoint(Path('.cache/smol_tok')))" 2>/dev/null | tail -1)
timeout 80 deepinfer-dspark train --target $T --out ~/drafter --num-prompts 64 --max-new-tokens 32 --steps 20 --num-calibration-prompts 8 > /dev/null 2>&1
python3 -c "
from deepinfer_dspark.sps import SPSProfile
SPSProfile([1, 2, 512], [300.0, 1000.0, 100.0], {'method': 'hand-made'}).save('$OUT/sps.json')
SPSProfile([4, 8, 2048], [200.0, 190.0, 10.0], {'method': 'hand-made'}).save('$OUT/spec_sps.json')"
B=packages/deepinfer-dspark/benchmarks/bench_dspark.py
timeout 160 python3 $B --target $T --drafter ~/drafter --max-tokens 128 --concurrency 1 8 32 --fixed 1 3 \
  --variants none fixed-1 fixed-3 --interleave 3 --sps $OUT/sps.json --spec-sps $OUT/spec_sps.json \
  --out $OUT/dspark_fixed.md > $OUT/bench_fixed.log 2>&1
grep -v "^|" $OUT/bench_fixed.log | grep -v "USDT\|_warn" | tail -9
timeout 200 python3 $B --target $T --drafter ~/drafter --max-tokens 128 --concurrency 64 256 --fixed 3 \
  --variants none confidence confidence-direct --interleave 5 --kv-cache-gib 8 --sps $OUT/sps.json --spec-sps $OUT/spec_sps.json \
  --out $OUT/dspark_paused.md > $OUT/bench_paused.log 2>&1
grep -v "^|" $OUT/bench_paused.log | grep -v "USDT\|_warn" | tail -6
