# Session 6, call 6: MoE with split tiles and the swept down GEMM: CUDA tests, the whole op against
# dense cuBLAS, the buckets with and without split tiles (step times of the picked one); then the
# paused DSpark engine with the variants in reversed order (is the second engine slower?).
source tools/gpu_env.sh >/dev/null 2>&1
cd packages/deepinfer-kernels
timeout 120 python3 -m pytest -q -rf --tb=short -n 4 tests/test_triton_moe.py tests/test_triton_moe_invariant.py tests/test_ref_moe.py tests/test_triton_moe_routing.py tests/test_batch_invariant.py -p no:cacheprovider > $OUT/moe_tests.txt 2>&1; tail -2 $OUT/moe_tests.txt
timeout 100 python3 benchmarks/bench_ops.py --no-reference --ops fused_moe > $OUT/bench_moe.txt 2>&1; grep -i "fused_moe\|Ceilings" $OUT/bench_moe.txt | cut -c1-230
timeout 150 python3 benchmarks/tune_moe.py --quick --tokens 256,1024,4096 > $OUT/tune_quick.txt 2>&1; grep -v "^  skip" $OUT/tune_quick.txt | head -40
cd ../..
T=$(python3 -c "import sys; sys.path.insert(0,'packages/deepinfer-core/benchmarks'); from structured_overhead import random_checkpoint; from pathlib import Path; print(random_checkpoint(Path('.cache/smol_tok')))" 2>/dev/null | tail -1)
timeout 100 deepinfer-dspark train --target $T --out ~/drafter --num-prompts 64 --max-new-tokens 32 --steps 20 --num-calibration-prompts 8 > $OUT/train.log 2>&1
python3 -c "
from deepinfer_dspark.sps import SPSProfile
SPSProfile([1, 2, 512], [300.0, 1000.0, 100.0], {'method': 'hand-made'}).save('$OUT/sps.json')
SPSProfile([4, 8, 2048], [200.0, 190.0, 10.0], {'method': 'hand-made'}).save('$OUT/spec_sps.json')"
timeout 200 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter --max-tokens 128 \
  --concurrency 64 128 256 --fixed 3 --variants confidence none --sps $OUT/sps.json --spec-sps $OUT/spec_sps.json \
  --out $OUT/dspark.md > $OUT/bench.log 2>&1
grep -v "^|" $OUT/bench.log | tail -7
