# Session 17, call 4 (right after call 3): the same drafter and call 3's profiles. At 1, 2 and 8
# requests: none, none-again, confidence and fixed-3/5/7, 7 paired rounds, with the step log.
ls ~/drafter_real/config.json ~/spec_sps.json ~/sps.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
P="--sps $HOME/sps.json --spec-sps $HOME/spec_sps.json"
timeout 400 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 2 8 --fixed 3 5 7 $P \
  --variants none none-again confidence fixed-3 fixed-5 fixed-7 --interleave 7 \
  --kv-cache-gib 8 --step-times --step-log $OUT/steps.jsonl --out $OUT/dspark_small.md > $OUT/bench_small.log 2>&1
gzip -f $OUT/steps.jsonl
grep -E "^[0-9]+ |rror|Trace" $OUT/bench_small.log | grep -v "step times" | cut -c1-400 | tail -40
