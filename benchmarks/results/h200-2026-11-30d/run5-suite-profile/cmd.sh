# Session 7, call 5: the whole kernel suite on CUDA after the TMA bucket (GPU_TESTS.md), then a
# cProfile of the engine thread for fixed k=3 at 1 request with the draft round in CUDA graphs
# (random-weight target, 20-step drafter): where a round's host time goes now.
source tools/gpu_env.sh >/dev/null 2>&1
cd packages/deepinfer-kernels
timeout 200 python3 -m pytest -q -rf --tb=short -n 6 tests -p no:cacheprovider > $OUT/kernel_suite.txt 2>&1; tail -3 $OUT/kernel_suite.txt
cd ../..
T=$(python3 -c "import sys; sys.path.insert(0,'packages/deepinfer-core/benchmarks'); from structured_overhead import random_checkpoint; from pathlib import Path; print(random_checkpoint(Path('.cache/smol_tok')))" 2>/dev/null | tail -1)
timeout 100 deepinfer-dspark train --target $T --out ~/drafter --num-prompts 64 --max-new-tokens 32 --steps 20 --num-calibration-prompts 8 > /dev/null 2>&1
python3 -c "
from deepinfer_dspark.sps import SPSProfile
SPSProfile([1, 2, 512], [300.0, 1000.0, 100.0], {'method': 'hand-made'}).save('$OUT/sps.json')
SPSProfile([4, 8, 2048], [200.0, 190.0, 10.0], {'method': 'hand-made'}).save('$OUT/spec_sps.json')"
timeout 120 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter --max-tokens 128 \
  --concurrency 1 --fixed 3 --variants fixed-3 --sps $OUT/sps.json --spec-sps $OUT/spec_sps.json \
  --profile $OUT/profile.txt --out $OUT/dspark.md > $OUT/bench.log 2>&1
grep -v "^|" $OUT/bench.log | tail -3
