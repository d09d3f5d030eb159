# Session 11, call 7: no speculation and confidence, 9 paired rounds at 32 and 128 requests.
source tools/gpu_env.sh >/dev/null 2>&1; T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 280 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 32 128 --variants none confidence --interleave 9 --kv-cache-gib 8 --sps ~/sps.json --spec-sps ~/spec_sps.json --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
grep -E "^[0-9]+ |rror|Trace" $OUT/bench_paired.log | cut -c1-330; tail -5 $OUT/dspark_paired.md
