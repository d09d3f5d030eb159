# Session 6, call 5: MoE kernels on CUDA (tests), the per-GEMM launch sweep, and the whole op with
# today's configurations (faster routing and align) against dense cuBLAS.
source tools/gpu_env.sh >/dev/null 2>&1
cd packages/deepinfer-kernels
timeout 120 python3 -m pytest -q -rf --tb=short -n 4 tests/test_triton_moe.py tests/test_triton_moe_invariant.py tests/test_ref_moe.py tests/test_triton_moe_routing.py -p no:cacheprovider > $OUT/moe_tests.txt 2>&1; tail -2 $OUT/moe_tests.txt
timeout 100 python3 benchmarks/bench_ops.py --no-reference --ops fused_moe > $OUT/bench_moe.txt 2>&1; grep -i "fused_moe\|copy\|matmul" $OUT/bench_moe.txt | tail -9
timeout 330 python3 benchmarks/tune_moe.py --per-gemm --json $OUT/moe_per_gemm.json > $OUT/moe_per_gemm.log 2>&1; tail -40 $OUT/moe_per_gemm.log
