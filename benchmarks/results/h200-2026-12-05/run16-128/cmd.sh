# Session 55 (H100, the last call of the lease, after run2-table's `high` call on the same machine): 128 requests,
# batch form, the profiles that `high` call had just measured and saved (~/o11high/out), 4 prompt sets: plain
# decoding, the default, the default's engine over an always-dormant proposer (`dormant-stub`) and plain decoding
# again. Its purpose: the default ran 0.878 of plain decoding at 128 in the table's call (3 sets, 9 engines alive).
source benchmarks/results/h200-2026-12-04i/setup/ready.sh >/dev/null 2>&1; P=~/o11high/out
W=~/o26; mkdir -p $W
timeout 200 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf \
  --drafter ~/drafter_real --max-tokens 128 --concurrency 128 --fixed 7 --sps $P/sps_batch.json --spec-sps $P/spec_sps_batch.json \
  --prompt-sets 4 --variants none confidence dormant-stub none-again --interleave 4 --kv-cache-gib 2.5 --out $W/dspark_batch.md > $W/bench.log 2>&1
echo rc $?; cp $W/bench.log $OUT/run16.log
grep -E "^[0-9]+ " $W/bench.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-330
