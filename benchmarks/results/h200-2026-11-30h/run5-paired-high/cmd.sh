# Session 11, call 5 (right after call 4): no speculation and confidence alone, 5 paired rounds at 8-256 requests, on call 3's profiles.
source tools/gpu_env.sh >/dev/null 2>&1; T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 230 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 8 32 128 256 --variants none confidence --interleave 5 --kv-cache-gib 8 --sps ~/sps.json --spec-sps ~/spec_sps.json --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
grep -E "^[0-9]+ confidence|rror|Trace" $OUT/bench_paired.log | cut -c1-400; tail -9 $OUT/dspark_paired.md
