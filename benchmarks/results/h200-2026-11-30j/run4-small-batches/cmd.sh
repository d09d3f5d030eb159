# Session 13, call 4 (right after call 3): the same drafter and call 3's profiles, at 1, 2, 4 and
# 8 requests (where the goals are tightest), 7 paired rounds, with step times.
ls ~/drafter_real/config.json ~/spec_k1_sps.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 250 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 2 4 8 --fixed 3 7 --sps ~/sps.json --spec-sps ~/spec_sps.json --spec-sps-k1 ~/spec_k1_sps.json \
  --variants none none-again confidence confidence-measured fixed-3 --interleave 7 \
  --kv-cache-gib 8 --step-times --out $OUT/dspark_small.md > $OUT/bench_small.log 2>&1
grep -E "^[0-9]+ |profile|rror|Trace" $OUT/bench_small.log | cut -c1-300 | tail -60
