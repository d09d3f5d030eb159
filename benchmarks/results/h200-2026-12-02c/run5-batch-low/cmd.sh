# Session 26, call 5 (right after call 4): the same table in batch form (one batch of C a call), for
# each call chats 4 x C prompts with at most C running, serving benchmarks' max concurrency)
# over 16 prompt sets, profiles measured first in this process (as session 25's call 3, whose
# batch form read confidence 0.992 / 0.979 / 0.985 of plain decoding), the step log beside it.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
W=~/o5; rm -rf $W; mkdir -p $W
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout $((LIMIT - 20)) python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 2 8 --fixed 3 7 --sps-method steps --sps-in-process --sps-sizes 1 2 4 8 \
  --sps-warmup 3 --prompt-sets 16 --save-sps $OUT/sps.json \
  --variants none none-again confidence fixed-3 fixed-7 --interleave 16 \
  --kv-cache-gib 8 --step-log $W/steps.jsonl --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
echo "paired rc $? at ${SECONDS} s"
gzip -f $W/steps.jsonl; cp $W/steps.jsonl.gz $OUT/
grep -E "^[0-9]+ |profile at" $OUT/bench_paired.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $OUT/bench_paired.log | tail -5
