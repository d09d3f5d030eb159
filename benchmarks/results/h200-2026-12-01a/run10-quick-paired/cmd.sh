# Session 16, call 10 (right after call 9): the 120 s drafter with the code after calls 4-7
# (declines after losses regretted where drafting wins; confidence without the k = 1 profile).
# None, none-again, confidence and fixed-7 at 1, 2, 8 and 64 requests, 3 paired rounds.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 150 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 2 8 64 --fixed 7 \
  --variants none none-again confidence fixed-7 --interleave 3 \
  --kv-cache-gib 8 --step-times --step-log $OUT/steps.jsonl --sps-method steps --save-sps $OUT/sps.json \
  --out $OUT/dspark_quick.md > $OUT/bench_quick.log 2>&1
gzip -f $OUT/steps.jsonl
grep -E "^[0-9]+ |profile|rror|Trace" $OUT/bench_quick.log | grep -v "step times" | cut -c1-300 | tail -30
