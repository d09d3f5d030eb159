# Session 20, call 9 (right after call 8): the 250 s drafter of call 8 with session 18's profiles,
# the code after session 20's fixes (a batch whose requests all have gaps is dormant; a paused
# opening no longer keeps the features of a load ruled out): none, none-again, confidence and
# fixed-7 at 1, 2 and 8 requests, 7 paired rounds, the step log.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
P=benchmarks/results/h200-2026-12-01c/run3-paired-dormant
timeout 200 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 2 8 --fixed 7 --sps $P/sps.json --spec-sps $P/spec_sps.json \
  --variants none none-again confidence fixed-7 --interleave 7 \
  --kv-cache-gib 8 --step-log $OUT/steps.jsonl \
  --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
gzip -f $OUT/steps.jsonl
grep -E "^[0-9]+ " $OUT/bench_paired.log | sed -E "s/'per-user tok\/s': [0-9.]+, //; s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $OUT/bench_paired.log | tail -5
