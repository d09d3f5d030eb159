# Session 16, call 7 (right after call 6; written on the spot, so this copy was made afterwards):
# the same drafter and profiles; at 1 and 2 requests none, none-again, confidence, confidence-k7
# (Algorithm 1 without the k = 1 profile), fixed-5 and fixed-7, 7 paired rounds, with the step log.
ls ~/drafter_real/config.json ~/spec_k1_sps.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
P="--sps $HOME/sps.json --spec-sps $HOME/spec_sps.json --spec-sps-k1 $HOME/spec_k1_sps.json"
timeout 300 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 2 --fixed 3 5 7 $P \
  --variants none none-again confidence confidence-k7 fixed-5 fixed-7 --interleave 7 \
  --kv-cache-gib 8 --step-times --step-log $OUT/steps.jsonl --out $OUT/dspark_one.md > $OUT/bench_one.log 2>&1
gzip -f $OUT/steps.jsonl
grep -E "^[0-9]+ |rror|Trace" $OUT/bench_one.log | grep -v "step times" | cut -c1-300 | tail -20
