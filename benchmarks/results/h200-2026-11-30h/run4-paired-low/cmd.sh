# Session 11, call 4 (right after call 3): the goals at 1 and 8 requests measured with less noise:
# no speculation, confidence, fixed-3, fixed-5 and fixed-7 alive at once, 5 paired rounds, on the
# profiles of call 3.
ls ~/drafter_real/config.json ~/sps.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 300 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 8 --fixed 3 5 7 --variants none confidence fixed-3 fixed-5 fixed-7 --interleave 5 \
  --kv-cache-gib 8 --sps ~/sps.json --spec-sps ~/spec_sps.json --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
grep -v "^|" $OUT/bench_paired.log | grep -v "USDT\|_warn" | grep -E "^[0-9]+ confidence|rror|Trace" | tail -6 | cut -c1-160
cat $OUT/dspark_paired.md | tail -14
