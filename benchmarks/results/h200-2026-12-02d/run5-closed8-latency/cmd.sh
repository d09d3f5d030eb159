# Session 27, call 5 (right after call 4): (a) `deepinfer bench latency` (TTFT, TPOT) on SmolLM2's
# shape (random weights) with and without --mixed-cuda-graphs (call 1 ran `deepinfer`, not on the
# PATH there); (b) call 3's closed loop at 8 requests again in a fresh process (8 prompt sets,
# call 3's profiles): none+mixed, none-again+mixed, confidence+mixed, fixed-7+mixed.
# Carry: .cache/smollm2_cfg
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
S=.cache/smollm2_cfg
for flag in "" --mixed-cuda-graphs; do
  timeout 80 python3 -m deepinfer_cli bench latency --model $S --load-format dummy --dtype bfloat16 --batch-sizes 1 8 \
    --input-len 128 --output-len 128 --max-model-len 2048 --max-num-seqs 8 --kv-cache-memory 8GiB $flag \
    > $OUT/latency$flag.log 2>&1
  echo "latency $flag rc $? at ${SECONDS} s"; grep -v "^\s*$" $OUT/latency$flag.log | tail -8
done
W=~/o5; rm -rf $W; mkdir -p $W
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks
P=benchmarks/results/h200-2026-12-02d/run3-closed-mixed
timeout $((LIMIT - SECONDS - 20)) python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 8 --fixed 7 --sps $P/sps.json --spec-sps $P/spec_sps.json \
  --prompt-sets 8 --closed-loop 4 --variants none+mixed none-again+mixed confidence+mixed fixed-7+mixed --interleave 8 \
  --kv-cache-gib 8 --step-log $W/steps.jsonl --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
echo "paired rc $? at ${SECONDS} s"
gzip -f $W/steps.jsonl; cp $W/steps.jsonl.gz $OUT/
grep -E "^[0-9]+ " $OUT/bench_paired.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $OUT/bench_paired.log | tail -5
python3 $B/step_log_report.py $OUT/steps.jsonl.gz --baseline none+mixed --prefills 2>&1 | tail -14
