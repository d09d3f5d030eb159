# Session 7, call 1: fused MoE with TMA loads (weights; the down GEMM's activation tiles; the
# gate/up GEMM's input rows gathered into the sorted layout first): CUDA tests, a per-GEMM sweep
# of the TMA variants at T=4096 (E=64, top-8), then the whole op for every bucket with and
# without TMA in one run, and bench_ops' fused_moe rows.
source tools/gpu_env.sh >/dev/null 2>&1
cd packages/deepinfer-kernels
timeout 100 python3 -m pytest -q -rf --tb=short -n 4 tests/test_triton_moe.py tests/test_triton_moe_invariant.py -p no:cacheprovider > $OUT/moe_tests.txt 2>&1; tail -2 $OUT/moe_tests.txt
timeout 200 python3 benchmarks/tune_moe.py --per-gemm --tma on --tokens 4096 --shapes 64:8:1024 --json $OUT/per_gemm_tma.json > $OUT/per_gemm_tma.log 2>&1; grep -v "^  skip" $OUT/per_gemm_tma.log | head -20
timeout 120 python3 benchmarks/tune_moe.py --quick --tokens 1024,4096 > $OUT/tune_quick.txt 2>&1; grep -v "^  skip" $OUT/tune_quick.txt | head -40
# Then where a DSpark round's host time goes: a cProfile of the engine thread at concurrency 1,
# no speculation and fixed k=3 (random-weight SmolLM2-shaped target, 20-step drafter, as in
# session 5's run 7; hand-made profiles so nothing is measured first).
cd ../..
T=$(python3 -c "import sys; sys.path.insert(0,'packages/deepinfer-core/benchmarks'); from structured_overhead import random_checkpoint; from pathlib import Path; print(random_checkpoint(Path('.cache/smol_tok')))" 2>/dev/null | tail -1)
timeout 100 deepinfer-dspark train --target $T --out ~/drafter --num-prompts 64 --max-new-tokens 32 --steps 20 --num-calibration-prompts 8 > $OUT/train.log 2>&1; tail -1 $OUT/train.log
python3 -c "
from deepinfer_dspark.sps import SPSProfile
SPSProfile([1, 2, 512], [300.0, 1000.0, 100.0], {'method': 'hand-made'}).save('$OUT/sps.json')
SPSProfile([4, 8, 2048], [200.0, 190.0, 10.0], {'method': 'hand-made'}).save('$OUT/spec_sps.json')"
timeout 120 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter --max-tokens 128 \
  --concurrency 1 --fixed 3 --variants none fixed-3 --sps $OUT/sps.json --spec-sps $OUT/spec_sps.json \
  --profile $OUT/profile.txt --out $OUT/dspark.md > $OUT/bench.log 2>&1
grep -v "^|" $OUT/bench.log | tail -4
