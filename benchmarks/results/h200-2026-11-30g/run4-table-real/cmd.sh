# Session 10, call 4 (right after call 3): the profiles of call 3; one engine per variant
# (no speculation, confidence, confidence with measured step times, fixed-3, fixed-5, fixed-7) at
# 1, 8, 32, 64, 128, 256, and a cProfile of the engine thread at 1 and 128 requests per variant.
ls ~/drafter_real/config.json ~/sps.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 450 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 8 32 64 128 256 --fixed 3 5 7 --variants none confidence confidence-measured fixed-3 fixed-5 fixed-7 \
  --sps ~/sps.json --spec-sps ~/spec_sps.json --profile $OUT/profile.txt --profile-at 1 128 --budget 300 \
  --out $OUT/dspark.md > $OUT/bench.log 2>&1
grep -v "^|" $OUT/bench.log | grep -v "USDT\|_warn" | tail -40 | cut -c1-150
