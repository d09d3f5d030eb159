# Session 62: ran four times on an H100 (out-h100-s62-a..d, with `confidence` then the default without `pre_flush`;
# `pre_flush` has been the default since, so the variants below now name the old default `confidence-late-flush`).
# `confidence-preflush` (the default projecting its buffered features at a quiet stretch's last
# step, while the device runs it: `DSparkProposer.pre_flush`) against the default, at 1 / 8 requests where drafting
# resumes after pauses (session 61's table at 8 on an H100: rounds that flushed 136-256 pairs took 1.4-3.9 ms more
# than a drafted round without one, ~3.7 ms). Plain decoding, the default, the candidate and plain decoding again in
# one process, pinned (run24's method), 8 paired rounds, every second one traced (`--step-log-every 2`): the traced
# rounds say whether the flushes moved out of the drafted rounds (`drafted+flush` rounds gone, the quiet stretches'
# last steps dearer) and the untraced ones pair the engines (`paired_pool.py OUT/bench_batch.log --against none-again
# --drop-every 2`; a point or so is inside one call's noise). Needs the five `../../h200-2026-12-04i/setup/bundle.sh`
# calls first; carry the GPU wheels (.cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build).
# ~200 s on an H100. (Since the rename, pool with `--engine confidence --against confidence-late-flush`.)
source benchmarks/results/h200-2026-12-04i/setup/ready.sh; T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks
export OMP_NUM_THREADS=2; W=~/o33; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
timeout ${TMO:-560} taskset -c 2-5 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 \
  --concurrency 1 8 --fixed 7 --sps-method steps --sps-in-process --sps-paired --sps-sizes 1 2 4 8 --sps-warmup 3 \
  --prompt-sets ${SETS:-8} --save-sps $W/out/sps_batch.json --variants none confidence-late-flush confidence none-again \
  --interleave ${SETS:-8} --kv-cache-gib 2.5 --step-log $W/out/steps.jsonl --step-log-every 2 \
  --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"; xz -9 -T0 -f $W/out/steps.jsonl || gzip -f $W/out/steps.jsonl
tar -C $W -czf $OUT/run33.tar.gz out
python3 $B/paired_pool.py $W/out/bench_batch.log --against none-again --drop-every 2 | grep -v "| none |"
grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-300
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
