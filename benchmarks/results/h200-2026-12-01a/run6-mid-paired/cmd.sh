# Session 16, call 6 (right after call 5, if the budget allows): the same drafter and profiles;
# none, none-again and confidence at 8, 32 and 64 requests, 9 paired rounds, with the step log:
# whether confidence stays within the none-again band where drafting loses.
ls ~/drafter_real/config.json ~/spec_k1_sps.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
P="--sps $HOME/sps.json --spec-sps $HOME/spec_sps.json --spec-sps-k1 $HOME/spec_k1_sps.json"
timeout 300 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 8 32 64 --fixed 3 7 $P \
  --variants none none-again confidence --interleave 9 \
  --kv-cache-gib 8 --step-times --step-log $OUT/steps.jsonl --out $OUT/dspark_mid.md > $OUT/bench_mid.log 2>&1
gzip -f $OUT/steps.jsonl
grep -E "^[0-9]+ |rror|Trace" $OUT/bench_mid.log | grep -v "step times" | cut -c1-400 | tail -40
