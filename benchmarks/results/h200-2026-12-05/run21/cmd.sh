# Session 56 (prepared, not run; superseded by run23, which answered it on a random-weight target without the
# bundle: pinned, plain decoding read itself mostly within 1% a round). The goals are read against a noise floor that is wide on the GPU machine's host:
# plain decoding against itself (`none-again`) read 0.62-1.51 a round at 1 request in run20 and a pooled geometric
# mean of 1.015 (0.972-1.060, 95% bootstrap) over run18-19's 48 untraced rounds at 8-256, so "never below plain decoding"
# cannot be told within ~4%. Does pinning the benchmark to a few cores of its own narrow it (the host is host-bound
# at <= 32 requests: every step's Python work is on the critical path; thread migration and frequency changes
# land in the step times)? Two processes on one machine: plain decoding, the default and plain decoding again at
# 1 / 8 / 32 requests, 16 paired rounds, profiles measured in the process; argument `pinned` runs it under
# `taskset -c 2-5` with OMP_NUM_THREADS=2, `free` as is. Compare with `paired_pool.py`: the spread of none-again's
# rounds (bootstrap interval width) pinned against free. Needs the five `../../h200-2026-12-04i/setup/bundle.sh`
# calls first; carry the GPU wheels. ~150 s a process.
source benchmarks/results/h200-2026-12-04i/setup/ready.sh
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
case ${1:-free} in
  pinned) PRE="taskset -c 2-5"; export OMP_NUM_THREADS=2;;
  free) PRE="";;
  *) echo "argument: pinned or free"; exit 2;;
esac
W=~/o21${1:-free}; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
timeout 280 $PRE python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 1 8 32 \
  --fixed 7 --sps-method steps --sps-in-process --sps-paired --sps-sizes 1 2 4 8 16 32 --sps-warmup 3 --prompt-sets 16 \
  --save-sps $W/out/sps_batch.json --variants none confidence none-again --interleave 16 --kv-cache-gib 2.5 \
  --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"; tar -C $W -czf $OUT/run21${1:-free}.tar.gz out
python3 $B/paired_pool.py $W/out/bench_batch.log --against none-again | tail -4
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
