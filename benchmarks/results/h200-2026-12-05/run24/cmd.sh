# Session 56 (prepared); ran in session 57 on an H200 (out-h200-low, out-h200-high), `high` twice in session 58 on an H100 (out-h100-s58-high, -high-b), `low` once and `high` three times in session 61 on an H100 (out-h100-s61-low, -high, -high-b, -high-c), `low` three times in session 62 on an H100 (out-h100-s62-low, -low-b, -low-c: the default 0.980 of plain decoding again at 8), `low` five times in session 63 on an H100 (out-h100-s63-low, -low-b..-e: 0.972 (0.952-0.991) at 8 over 40 rounds, with `pre_flush`). run18's question ("never below plain decoding" at 8-256, against plain decoding run
# Session 64 on an H100 at 51a7c33 (the exact straggler factor): `low` three times (out-h100-s64-low, -low-b, -low-c: 0.976 at 8, three of three below 1) and `high` once (out-h100-s64-high); dspark BENCHMARKS "sixtieth session".
# twice in the same process) with what run23 found: pinned to cores of its own (`taskset -c 2-5`,
# OMP_NUM_THREADS=2) plain decoding read itself mostly within 1% a round on an H100 (0.988-1.028 at 8), against
# 0.81-1.11 unpinned, once the first 1-3 rounds of a concurrency were past; `bench_dspark.py` now warms each engine with a call of the first
# prompt set at each concurrency (`--warmup-calls 1`, the default since session 56). 8 paired rounds, no step log,
# profiles measured in the process. Argument "low" for 1 / 8 / 32 (adds fixed-7 and fixed-5: the 1-request goal),
# "high" for 64 / 128 / 256. Read with `paired_pool.py OUT/bench_batch.log --against none-again`. Needs the five
# `../../h200-2026-12-04i/setup/bundle.sh` calls first; carry the GPU wheels. ~200-300 s a call.
# Session 60: `SETS=4 TMO=240 bash .../cmd.sh high` for a short call (4 rounds a concurrency) where the lease is nearly spent.
# Session 66 on an H100: `high` with `dormant-stub` added (`sed 's/V="none confidence none-again";;/V="none confidence
# dormant-stub none-again";;/'`), `WARM=4 TMO=470` (out-h100-s66-high, 250 s): plain decoding again read itself at
# 0.85 / 1.00 / 0.83 (geometric means; rounds 0.33-1.26): no reading of the dormant cost at 64-256.
# Session 65: `WARM=N` passes `--warmup-calls N` (default 1); run34 with `WARM=4` read plain decoding again at
# 1.000 / 1.008 / 0.999 of plain decoding in three of six processes (dspark BENCHMARKS "sixty-first session").
source benchmarks/results/h200-2026-12-04i/setup/ready.sh; T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks
case ${1:-low} in
  low) C="1 8 32"; SIZES="1 2 4 8 16 32"; V="none confidence none-again fixed-5 fixed-7";;
  high) C="64 128 256"; SIZES="1 8 32 64 128 256"; V="none confidence none-again";;
  *) echo "argument: low or high"; exit 2;;
esac
export OMP_NUM_THREADS=2; W=~/o24${1:-low}; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
timeout ${TMO:-560} taskset -c 2-5 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 \
  --concurrency $C --fixed 5 7 --sps-method steps --sps-in-process --sps-paired --sps-sizes $SIZES --sps-warmup 3 \
  --prompt-sets ${SETS:-8} --save-sps $W/out/sps_batch.json --variants $V --interleave ${SETS:-8} --kv-cache-gib 2.5 \
  --warmup-calls ${WARM:-1} \
  --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"; tar -C $W -czf $OUT/run24${1:-low}.tar.gz out
python3 $B/paired_pool.py $W/out/bench_batch.log --against none-again | grep -v "| none |"
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
