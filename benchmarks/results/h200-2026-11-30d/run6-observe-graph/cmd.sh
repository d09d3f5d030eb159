# Session 7, call 6: draft round and context projection both in CUDA graphs, pinned copies in
# verification: CUDA tests, then no speculation against fixed k = 1 and 3 at 1, 8 and 32
# requests (random-weight target, 20-step drafter, 3 paired rounds), and a cProfile of fixed-3
# at 1 request.
source tools/gpu_env.sh >/dev/null 2>&1
timeout 120 python3 -m pytest -q -rf --tb=short packages/deepinfer-dspark/tests/test_observe_graph.py packages/deepinfer-dspark/tests/test_draft_graph.py packages/deepinfer-dspark/tests/test_engine_proposers.py -p no:cacheprovider > $OUT/graph_tests.txt 2>&1; tail -2 $OUT/graph_tests.txt
T=$(python3 -c "import sys; sys.path.insert(0,'packages/deepinfer-core/benchmarks'); from structured_overhead import random_checkpoint; from pathlib import Path; print(random_checkpoint(Path('.cache/smol_tok')))" 2>/dev/null | tail -1)
timeout 100 deepinfer-dspark train --target $T --out ~/drafter --num-prompts 64 --max-new-tokens 32 --steps 20 --num-calibration-prompts 8 > /dev/null 2>&1
python3 -c "
from deepinfer_dspark.sps import SPSProfile
SPSProfile([1, 2, 512], [300.0, 1000.0, 100.0], {'method': 'hand-made'}).save('$OUT/sps.json')
SPSProfile([4, 8, 2048], [200.0, 190.0, 10.0], {'method': 'hand-made'}).save('$OUT/spec_sps.json')"
timeout 170 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter --max-tokens 128 \
  --concurrency 1 8 32 --fixed 1 3 --variants none fixed-1 fixed-3 --interleave 3 \
  --sps $OUT/sps.json --spec-sps $OUT/spec_sps.json --out $OUT/dspark.md > $OUT/bench.log 2>&1
grep -v "^|" $OUT/bench.log | tail -9
timeout 60 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter --max-tokens 128 \
  --concurrency 1 --fixed 3 --variants fixed-3 --sps $OUT/sps.json --spec-sps $OUT/spec_sps.json \
  --profile $OUT/profile.txt > $OUT/bench_profile.log 2>&1
grep -v "^|" $OUT/bench_profile.log | tail -2
