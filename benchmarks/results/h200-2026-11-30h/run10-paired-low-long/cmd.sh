# Session 11, call 10: no speculation, confidence and fixed-7, 7 paired rounds at 1 and 8 requests.
source tools/gpu_env.sh >/dev/null 2>&1; T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 170 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 1 8 --variants none confidence fixed-7 --fixed 7 --interleave 7 --kv-cache-gib 8 --sps ~/sps.json --spec-sps ~/spec_sps.json --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
grep -E "^[0-9]+ confidence|rror|Trace" $OUT/bench_paired.log | cut -c1-330; tail -7 $OUT/dspark_paired.md
