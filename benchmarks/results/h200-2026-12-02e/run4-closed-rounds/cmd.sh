# Session 28, call 4 (right after call 3): the closed loop (--closed-loop 4, 1/2/8 requests, 16
# prompt sets, profiles measured first in this process), mixed graphs on, with confidence-rounds;
# step_log_report.py --profiles (session 27: rounds 1.2-1.5x the profile at concurrency 8 here).
# Then whether that is the five engines in one process: concurrency 8 alone with none and fixed-7
# only (two engines), call 3's profiles loaded, rounds against them again.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
W=~/o4; rm -rf $W; mkdir -p $W $OUT/two
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks
timeout 420 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 2 8 --fixed 7 --sps-method steps --sps-in-process --sps-sizes 1 2 4 8 \
  --sps-warmup 3 --prompt-sets 16 --closed-loop 4 --save-sps $OUT/sps.json \
  --variants none none-again confidence confidence-rounds fixed-7 --interleave 16 \
  --kv-cache-gib 8 --step-log $W/steps.jsonl --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
echo "paired rc $? at ${SECONDS} s"
gzip -f $W/steps.jsonl; cp $W/steps.jsonl.gz $OUT/
grep -E "^[0-9]+ |profile at" $OUT/bench_paired.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $OUT/bench_paired.log | tail -5
python3 $B/step_log_report.py $OUT/steps.jsonl.gz --profiles $OUT 2>&1 | tail -40
timeout $((580 - SECONDS)) python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 8 --fixed 7 --sps $OUT/sps.json --spec-sps $OUT/spec_sps.json \
  --prompt-sets 8 --closed-loop 4 --variants none fixed-7 --interleave 8 \
  --kv-cache-gib 8 --step-log $W/two.jsonl --out $OUT/two/dspark_paired.md > $OUT/two/bench.log 2>&1
echo "two rc $? at ${SECONDS} s"; grep -E "^[0-9]+ " $OUT/two/bench.log | cut -c1-300
gzip -f $W/two.jsonl; cp $W/two.jsonl.gz $OUT/two/
cp $OUT/sps.json $OUT/spec_sps.json $OUT/two/ 2>/dev/null
python3 $B/step_log_report.py $OUT/two/two.jsonl.gz --profiles $OUT/two 2>&1 | tail -15
