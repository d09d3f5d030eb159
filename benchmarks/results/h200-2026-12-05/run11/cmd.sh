# Session 54. The prompt-lookup wrapper's search budget (`LookupAssist.search_budget` 1: each request searched about
# every `requests` tokens) against the old wrapper (`confidence-search-all`: every request every step), where it
# searches: closed loops at 2 and 4 requests (`--closed-loop 3`), plain decoding, the default, the old wrapper and
# DSpark alone, ${SETS:-6} prompt sets, run2's closed profiles, no step log. Needs the five `bundle.sh` calls first.
source benchmarks/results/h200-2026-12-04i/setup/ready.sh
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
P=benchmarks/results/h200-2026-12-05/run2/closed; W=~/o21; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
timeout ${LIMIT:-300} python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 2 4 \
  --fixed 7 --sps $P/sps_batch.json --spec-sps $P/spec_sps_batch.json --prompt-sets ${SETS:-6} \
  --variants none confidence confidence-search-all confidence-alone --interleave ${SETS:-6} --closed-loop 3 \
  --kv-cache-gib 6 --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"; tar -C $W -czf $OUT/run11.tar.gz out
grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
