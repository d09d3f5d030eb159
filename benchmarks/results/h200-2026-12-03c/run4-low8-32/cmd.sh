# Session 34, call 4 (right after call 3, its drafter): gpu_plan item 0, `measure_plain_steps` on the H200. Batch form,
# profiles measured first, step logs: plain decoding, the default engine (`confidence`), the default with
# `measure_plain_steps` (`confidence-plain`), that with `measure_round_times` too (`confidence-timed`), plain
# decoding again; 8 requests over 16 prompt sets, then 32 over 8. Also brings back the drafter's last part.
ls ~/drafter_real/config.json || exit 3
cp ~/stash/parts/drafter_part_ae $OUT/ && ls ~/stash/parts
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks
for run in 8:16:250:"1 2 4 8" 32:8:200:"1 2 4 8 16 32"; do
  IFS=: read conc sets lim sizes <<< "$run"
  W=~/o$conc; rm -rf $W; mkdir -p $W/out
  timeout $lim python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real \
    --max-tokens 128 --concurrency $conc --fixed 7 --sps-method steps --sps-in-process --sps-sizes $sizes \
    --sps-warmup 3 --prompt-sets $sets --save-sps $W/out/sps_batch.json \
    --variants none confidence confidence-plain confidence-timed none-again --interleave $sets \
    --kv-cache-gib 8 --step-log $W/out/steps.jsonl --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
  echo "$conc rc $? at ${SECONDS} s"
  gzip -f $W/out/steps.jsonl; rm -f $W/out/spec_sps_*.json
  tar -C $W -czf $OUT/run_$conc.tar.gz out
  grep -E "^[0-9]+ |profile at" $W/out/bench_batch.log | grep -v "step times" | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-330
  grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
done
