# Session 20, call 5 (right after call 4, if the lease has the time): the same drafter at 128 and
# 256 requests: none, none-again, confidence, fixed-3 and fixed-7, 3 paired rounds.
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
P=benchmarks/results/h200-2026-12-01c/run3-paired-dormant
timeout 300 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 128 256 --fixed 3 7 --sps $P/sps.json --spec-sps $P/spec_sps.json \
  --variants none none-again confidence fixed-3 fixed-7 --interleave 3 \
  --kv-cache-gib 8 --out $OUT/dspark_paired.md > $OUT/bench_paired.log 2>&1
grep -E "^[0-9]+ " $OUT/bench_paired.log | sed -E "s/'per-user tok\/s': [0-9.]+, //; s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $OUT/bench_paired.log | tail -5
