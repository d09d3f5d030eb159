# Session 8, call 5 (right after call 4): SmolLM2-135M-Instruct with the drafter of call 4. No
# speculation, confidence scheduling (k = 7, profiles measured here first) and fixed k = 1, 2, 3, 5, 7
# at 1, 8, 32, 64, 128 and 256 requests, one engine per variant; then no speculation and
# confidence scheduling interleaved (all engines alive, 3 paired rounds) at 1, 8, 64 and 256.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks/bench_dspark.py
timeout 420 python3 $B --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 1 8 32 64 128 256 \
  --fixed 1 2 3 5 7 --variants none confidence fixed-1 fixed-2 fixed-3 fixed-5 fixed-7 --budget 300 \
  --save-sps $OUT/sps.json --out $OUT/dspark.md > $OUT/bench.log 2>&1
grep -v "^|" $OUT/bench.log | grep -v "USDT\|_warn" | tail -4
timeout 120 python3 $B --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 1 8 64 256 --fixed 7 \
  --variants none confidence --interleave 3 --kv-cache-gib 8 --sps $OUT/sps.json --spec-sps $OUT/spec_sps.json \
  --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
grep -v "^|" $OUT/bench_paired.log | grep -v "USDT\|_warn" | tail -8
