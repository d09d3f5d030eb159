# Session 55 (prepared, not run). On an H100 (session 55, the issue's table `low`, step log) the default's drafted
# rounds at 1 request took 2.855 ms (median) against fixed-7's 2.649: the same drafts verified (6.90 a round, accepted
# length 3.78 with the bonus token), so +0.2 ms of host work a round, 0.915 of fixed-7 (traced rounds). Where do those 0.2 ms go on the GPU
# machine's host? One process: plain decoding, fixed-7 and the default at 1 request, 16 paired rounds (the harness
# now collects garbage between calls, `paired_calls.HeapOutside`), a step log every 2nd round, then one
# torch.profiler run per engine (`--torch-profile`, traces exported) and `gpu_gaps.py` over the traces: the GPU's
# idle time by the host phase that kept it waiting, default against fixed-7. The card's own profiles (`here`) or
# run2's low ones. Needs the five `../../h200-2026-12-04i/setup/bundle.sh` calls first; carry the GPU wheels.
source benchmarks/results/h200-2026-12-04i/setup/ready.sh
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
P=benchmarks/results/h200-2026-12-05/run2/low; W=~/o27; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
if [ "${1:-}" = here ]; then PROF="--sps-method steps --sps-in-process --sps-paired --sps-sizes 1 2 4 8 --sps-warmup 3 \
  --save-sps $W/out/sps_batch.json"; else PROF="--sps $P/sps_batch.json --spec-sps $P/spec_sps_batch.json"; fi
timeout 400 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 1 \
  --fixed 7 $PROF --prompt-sets 16 --variants none fixed-7 confidence --interleave 16 --kv-cache-gib 6 \
  --step-log $W/out/steps.jsonl --step-log-every 2 --torch-profile $W/out/torch.txt --profile-at 1 \
  --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"
python3 $B/gpu_gaps.py $W/out/torch-*.trace.json.gz > $W/out/gpu_gaps.md 2>&1
python3 $B/step_log_report.py $W/out/steps.jsonl --calls > $W/out/steps_report.md 2>&1
xz -9 -T0 -f $W/out/steps.jsonl || gzip -f $W/out/steps.jsonl; tar -C $W -czf $OUT/run17.tar.gz out
grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
head -60 $W/out/gpu_gaps.md; grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
