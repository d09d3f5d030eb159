# Session 50: the frozen heap (`EngineConfig.freeze_heap`, on by default since this session) paired against its
# absence in one process. On this repository's CPU a full garbage-collector pass walked ~228,000 start-up objects
# (100-110 ms) and at 256 requests a confidence-scheduled engine met twice plain decoding's passes (+8.8% a call,
# +0.9% frozen). Here: plain decoding and the default, each with the heap frozen and thawed (`+thawed`), batch form
# at 64 / 256 requests, 5 prompt sets, 128 new tokens, run2's high profiles (no profile measured, no step log).
# Needs the setup of run2 (`h200-2026-12-04i/setup/bundle.sh part_00..04`); carry the GPU wheels as run2 does.
source benchmarks/results/h200-2026-12-04i/setup/ready.sh
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
P=benchmarks/results/h200-2026-12-05/run2/high; W=~/o15; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
timeout 230 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 64 256 \
  --fixed 7 --sps $P/sps_batch.json --spec-sps $P/spec_sps_batch.json --prompt-sets 5 \
  --variants none none+thawed confidence confidence+thawed --interleave 5 --kv-cache-gib 6 \
  --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"; tar -C $W -czf $OUT/run5.tar.gz out
grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-330
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
