# Session 15, call 7 (right after call 6): the code with `decline_features` (while drafting is
# ruled out at the current load, the target replays feature-free decode graphs and nothing is
# buffered). As call 3 without fixed-3 (measured there): three profiles, then none, none-again
# and confidence at 1-256 requests, 5 paired rounds, step times and every step as JSON lines.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 400 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 8 32 64 128 256 --fixed 3 7 \
  --variants none none-again confidence --interleave 5 \
  --kv-cache-gib 8 --step-times --step-log $OUT/steps.jsonl --sps-method steps --save-sps $OUT/sps.json \
  --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
gzip -f $OUT/steps.jsonl
grep -E "^[0-9]+ |profile|rror|Trace" $OUT/bench_paired.log | grep -v "step times" | cut -c1-400 | tail -40
