# Session 12, call 4 (right after call 3): the best fixed k below 64 requests: no speculation,
# fixed-1, 2, 3, 5 and confidence alive at once, 3 paired rounds at 1, 8 and 32 requests, on the
# profiles of call 3.
ls ~/drafter_real/config.json ~/sps.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 330 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 8 32 --fixed 1 2 3 5 --variants none fixed-1 fixed-2 fixed-3 fixed-5 confidence \
  --interleave 3 --kv-cache-gib 8 --sps ~/sps.json --spec-sps ~/spec_sps.json --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
grep -v "^|" $OUT/bench_paired.log | grep -v "USDT\|_warn" | grep -E "^[0-9]+ |rror|Trace" | tail -20 | cut -c1-300
cat $OUT/dspark_paired.md | tail -20
