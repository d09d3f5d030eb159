# Session 57. run24 (pinned, 8 rounds, no step log) on an H200: the default read 0.963 of plain decoding at 64
# requests where plain decoding run again read 1.014, and session 57's table (run2-table/out-h200-s57-high, one
# traced round) put the default's matched decode steps +0.036 / +0.109 / +0.104 ms over plain decoding's at
# 64 / 128 / 256 while it drafted nothing. Is that the proposer's dormant steps, or any second engine in the
# process? Every round traced (--step-log, every step's ms), plain decoding run twice: read with
# `step_log_report.py OUT/steps.jsonl.xz` (matched steps of `confidence` and of `none-again` against `none`) and
# `paired_pool.py OUT/bench_batch.log --against none-again`. Pinned as run24. Needs the five
# `../../h200-2026-12-04i/setup/bundle.sh` calls first; carry the GPU wheels. ~250 s.
source benchmarks/results/h200-2026-12-04i/setup/ready.sh; T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks
export OMP_NUM_THREADS=2; W=~/o25; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
timeout 560 taskset -c 2-5 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 \
  --concurrency 8 64 128 --fixed 7 --sps-method steps --sps-in-process --sps-paired --sps-sizes 1 8 32 64 128 \
  --sps-warmup 3 --prompt-sets 6 --save-sps $W/out/sps_batch.json --variants none confidence none-again \
  --interleave 6 --kv-cache-gib 2.5 --step-log $W/out/steps.jsonl --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"; xz -9 -T0 -f $W/out/steps.jsonl || gzip -f $W/out/steps.jsonl
tar -C $W -czf $OUT/run25.tar.gz out
python3 $B/paired_pool.py $W/out/bench_batch.log --against none-again | grep -v "| none |"
python3 $B/step_log_report.py $W/out/steps.jsonl.* | tail -12
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
