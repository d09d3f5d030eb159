# Session 6, call 7: the whole kernel suite on CUDA (after the MoE changes), and the core
# structured-output / asynchronous-loop tests and the dspark engine-proposer tests on CUDA.
source tools/gpu_env.sh >/dev/null 2>&1
timeout 200 python3 -m pytest -q -p no:cacheprovider -rf --tb=short -n 6 packages/deepinfer-kernels/tests > $OUT/kernel_tests.txt 2>&1; tail -3 $OUT/kernel_tests.txt
timeout 200 python3 -m pytest -q -p no:cacheprovider -rf --tb=short -n 4 packages/deepinfer-core/tests -k "structured or async or grammar" packages/deepinfer-dspark/tests/test_engine_proposers.py packages/deepinfer-dspark/tests/test_pending_context.py > $OUT/core_tests.txt 2>&1; tail -3 $OUT/core_tests.txt
