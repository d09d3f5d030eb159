# Session 22, call 3 (right after call 2, same drafter): (a) fresh profiles at 1-8 requests with
# this code (session 18's were 8% off at 8 requests: plain steps 1.23 ms there against 1.13 ms
# in session 21's table), and where the GPU waits for the host in a run at 1 request of none,
# fixed-7 and confidence (torch.profiler traces with the engine's phases marked; gpu_gaps.py):
# session 21 timed confidence's drafted rounds 0.15-0.23 ms above fixed-7's with the same drafts
# verified. (b) The table at 1, 2 and 8 requests on those profiles, 7 paired rounds, step log.
# $OUT takes 8 files: the rest travels in run3.tgz.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
W=~/o3; rm -rf $W; mkdir -p $W
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
BENCH="python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter $HOME/drafter_real --max-tokens 128"
timeout 230 $BENCH --concurrency 1 2 8 --fixed 7 --variants none fixed-7 confidence --sps-method steps \
  --save-sps $W/sps.json --torch-profile $W/torch.txt --profile-at 1 --kv-cache-gib 8 \
  --out $W/dspark_alone.md > $W/bench_alone.log 2>&1
echo "alone rc $? at ${SECONDS} s"
python3 packages/deepinfer-dspark/benchmarks/gpu_gaps.py $W/torch-*-at-1.trace.json.gz > $OUT/gaps.md 2>&1; cat $OUT/gaps.md
grep -E "^[0-9]+ |profile at" $W/bench_alone.log | sed -E "s/'per-user tok\/s': [0-9.]+, //; s/draft graphs.*//" | cut -c1-300
timeout $((590 - SECONDS)) $BENCH --concurrency 1 2 8 --fixed 3 4 7 --sps $W/sps.json --spec-sps $W/spec_sps.json \
  --variants none none-again confidence confidence-whole fixed-3 fixed-4 fixed-7 --interleave 7 --kv-cache-gib 8 \
  --step-log $W/steps.jsonl --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
echo "paired rc $? at ${SECONDS} s"
gzip -f $W/steps.jsonl; cp $W/sps.json $W/spec_sps.json ~/; tar czf $OUT/run3.tgz -C $W .
grep -E "^[0-9]+ " $OUT/bench_paired.log | sed -E "s/'per-user tok\/s': [0-9.]+, //; s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $OUT/bench_paired.log $W/bench_alone.log | tail -5
