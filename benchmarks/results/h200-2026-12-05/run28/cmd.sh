# Session 57 (prepared); ran in session 58 on an H100: `high` twice (out-h100-s58-high, -high-b), `STREAMS=1 high` (out-h100-s58-high-streams), `STREAMS=1 low` (out-h100-s58-low-streams). run24 / run26 with `--lockstep` (new): a round's calls run at once, one engine
# step at a time in turn, so the process's drift by round (run25: +-0.3-0.7 ms a step over a whole round at 128)
# falls on plain decoding, the default and plain decoding again alike. If plain decoding against itself now reads
# within ~1% a cell, the default against it tells "never below plain decoding" at 64-256, where it drafts nothing
# (lockstep is biased against an engine that drafts: its verification waits for the other engines' queued steps on
# the shared stream; rows count such calls, `lockstep drafted calls`). Argument "high" for 64 / 128 / 256 (first);
# "low" for 1 / 8 / 32 with fixed-7, where the drafting engines' cells are lower bounds; `STREAMS=1` adds
# `--lockstep-streams` (each engine on a CUDA stream of its own: should lift that bias; new, untried). Pinned as run24; 8 rounds; read
# with `paired_pool.py OUT/bench_batch.log --against none-again`. Needs the five
# `../../h200-2026-12-04i/setup/bundle.sh` calls first; carry the GPU wheels. ~200-300 s a call (dry-run on this
# CPU: `--concurrency 2 4 --max-tokens 16 --dtype float32`, profiles from run24 via --sps / --spec-sps).
source benchmarks/results/h200-2026-12-04i/setup/ready.sh; T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks
case ${1:-high} in
  low) C="1 8 32"; SIZES="1 2 4 8 16 32"; V="none confidence none-again fixed-7";;
  high) C="64 128 256"; SIZES="1 8 32 64 128 256"; V="none confidence none-again";;
  *) echo "argument: low or high"; exit 2;;
esac
export OMP_NUM_THREADS=2; W=~/o28${1:-high}; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
timeout ${LIMIT:-560} taskset -c 2-5 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 \
  --concurrency $C --fixed 7 --sps-method steps --sps-in-process --sps-paired --sps-sizes $SIZES --sps-warmup 3 \
  --prompt-sets 8 --save-sps $W/out/sps_batch.json --variants $V --interleave 8 --lockstep $([ "${STREAMS:-0}" = 1 ] && echo --lockstep-streams) --kv-cache-gib 2.5 \
  --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"; tar -C $W -czf $OUT/run28${1:-high}.tar.gz out
python3 $B/paired_pool.py $W/out/bench_batch.log --against none-again | grep -v "| none |"
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
