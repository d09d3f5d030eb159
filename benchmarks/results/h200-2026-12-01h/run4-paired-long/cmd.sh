# Session 23, call 4 (right after call 3, same drafter; call 3 took 113 s): as call 3 with 27 paired rounds: the table at 1, 2 and 8 requests on
# session 18's profiles (session 22's fresh ones were measured in a "slow spell": k=7 rounds 3.43
# ms at 1 request against 2.5-2.7 outside them), 9 paired rounds, step log (each step's wall-clock
# end `t`), and nvidia-smi's clocks, power and throttle reasons every 100 ms beside it: are the
# spells (whole calls of speculative engines 25-35% slower, plain steps not) the GPU's clocks?
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
W=~/o3; rm -rf $W; mkdir -p $W
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
P=benchmarks/results/h200-2026-12-01c/run3-paired-dormant
nvidia-smi -q -d PERFORMANCE,CLOCK,POWER > $OUT/perf_before.txt 2>&1
date +%s.%N > $OUT/clock_start.txt
Q=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu,pstate,temperature.gpu
nvidia-smi --query-gpu=$Q --format=csv,noheader -c 1 > /dev/null 2>&1 || Q=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu
nvidia-smi --query-gpu=$Q --format=csv,noheader -lms 100 > $W/clocks.csv 2>&1 &
SMI=$!
timeout 500 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 2 8 --fixed 4 7 --sps $P/sps.json --spec-sps $P/spec_sps.json \
  --variants none none-again confidence fixed-4 fixed-7 --interleave 27 --kv-cache-gib 8 \
  --step-log $W/steps.jsonl --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
echo "paired rc $? at ${SECONDS} s"
kill $SMI; date +%s.%N >> $OUT/clock_start.txt
nvidia-smi -q -d PERFORMANCE,CLOCK,POWER > $OUT/perf_after.txt 2>&1
gzip -f $W/steps.jsonl $W/clocks.csv; cp $W/steps.jsonl.gz $W/clocks.csv.gz $OUT/
grep -E "^[0-9]+ " $OUT/bench_paired.log | sed -E "s/'per-user tok\/s': [0-9.]+, //; s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $OUT/bench_paired.log | tail -5
awk -F', ' '{print $2, $3, $6, $7}' <(zcat $OUT/clocks.csv.gz) | sort | uniq -c | sort -rn | head -12
