# Session 7, call 3: the CUDA-graph draft round (tests on CUDA, then fixed-k against no
# speculation at 1 and 8 requests on the random-weight target with a 20-step drafter, 3 paired
# rounds), a per-GEMM TMA sweep for E=8 top-2 at T=4096, and the first half of the SmolLM2 GGUF
# for the next call.
mkdir -p ~/gguf && cp .cache/gguf/part_aa ~/gguf/
source tools/gpu_env.sh >/dev/null 2>&1
timeout 150 python3 -m pytest -q -rf --tb=short packages/deepinfer-dspark/tests/test_draft_graph.py packages/deepinfer-dspark/tests/test_engine_proposers.py -p no:cacheprovider > $OUT/graph_tests.txt 2>&1; tail -2 $OUT/graph_tests.txt
T=$(python3 -c "import sys; sys.path.insert(0,'packages/deepinfer-core/benchmarks'); from structured_overhead import random_checkpoint; from pathlib import Path; print(random_checkpoint(Path('.cache/smol_tok')))" 2>/dev/null | tail -1)
timeout 100 deepinfer-dspark train --target $T --out ~/drafter --num-prompts 64 --max-new-tokens 32 --steps 20 --num-calibration-prompts 8 > /dev/null 2>&1
python3 -c "
from deepinfer_dspark.sps import SPSProfile
SPSProfile([1, 2, 512], [300.0, 1000.0, 100.0], {'method': 'hand-made'}).save('$OUT/sps.json')
SPSProfile([4, 8, 2048], [200.0, 190.0, 10.0], {'method': 'hand-made'}).save('$OUT/spec_sps.json')"
timeout 150 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter --max-tokens 128 \
  --concurrency 1 8 --fixed 1 3 --variants none fixed-1 fixed-3 --interleave 3 \
  --sps $OUT/sps.json --spec-sps $OUT/spec_sps.json --out $OUT/dspark.md > $OUT/bench.log 2>&1
grep -v "^|" $OUT/bench.log | tail -6
cd packages/deepinfer-kernels
timeout 100 python3 benchmarks/tune_moe.py --per-gemm --tma on --max-configs 10 --tokens 4096 --shapes 8:2:768 > $OUT/per_gemm_e8.log 2>&1; grep -v "^  skip" $OUT/per_gemm_e8.log | head -12
