# Session 10, call 5: what a paused DSpark engine costs over plain decoding, split in two
# (bench_paused.py): a random SmolLM2-135M-shaped target and a random one-layer drafter, three
# engines alive at once (none, paused, paused with the features dropped by the proposer), 5 paired
# rounds at 8, 32, 128, 256 requests, then torch.profiler and cProfile tables at 32 and 128.
source tools/gpu_env.sh > /dev/null 2>&1
export PYTHONPATH=$PYTHONPATH:$PWD/packages/deepinfer-core/benchmarks
T=$(python3 -c "from pathlib import Path; from structured_overhead import random_checkpoint; print(random_checkpoint(Path('.cache/smol_tok')))" 2>/dev/null | tail -1)
echo "target $T"
cd packages/deepinfer-dspark/benchmarks
timeout 400 python3 bench_paused.py --target $T --spec-sps ../../../benchmarks/results/h200-2026-11-30g/run3-paired-real/spec_sps.json \
  --concurrency 8 32 128 256 --rounds 5 --out $OUT/paused.md --torch-profile $OUT/torch.txt --profile $OUT/profile.txt \
  --profile-at 32 128 > $OUT/bench.log 2>&1
grep -v "USDT\|_warn\|Warn" $OUT/bench.log | tail -25 | cut -c1-160
