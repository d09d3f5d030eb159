# Session 79: `LEDGER=1 PIN=1 ... low` (274 s) and `... high` (331 s, KV 6 GiB) on an H200 (out-h200-s79-low, -high): the
# default 0.951 (0.934-0.964) of fixed-7 at 1 request, 1.17x the best fixed k at 8, 1.6-2.2x at 32-256 (dspark BENCHMARKS
# "seventy-fifth session"); at 32-256 no plain-again control: goal 1 there is run24 `high`'s.
# Session 70: `SETS=5 KV=2.5 LEDGER=1 PIN=1 ... high` on an H100 (out-h100-s70-high, 283 s: 2.2-3.5x the best fixed k
# at 64-256; the dormant default 0.992 / 0.927 / 1.49 of plain decoding at 64 / 128 / 256, 256 noise).
# Session 69: `LEDGER=1 PIN=1 ... low` on an H100 with a retrained drafter (out-h100-s69-low: 1.010 of fixed-7 at 1
# request by geometric means, 1.068 of fixed-6 at 8, 1.63x at 32).
# Session 60: `PIN=1 ... high` on an H200 (out-h200-s60-high: the faster engine of session 59); `low` was cut off when the lease was taken back.
# Session 61: `PIN=1 ... low` on an H100 (out-h100-s61-low: at 1 request the default 0.986 of fixed-7 round by round).
# Session 64: `LEDGER=1 PIN=1 ... high` on an H100 ran out of GPU memory while building its engines (the 64-256 engines' 6 GiB KV caches): `high` needs the H200.
# Session 62: `LEDGER=1` adds the pause ledgers to the traced rounds' step log (`--step-log-ledger`): why the default probed at 8
# (its first run, `LEDGER=1 PIN=1 ... low` on an H100, out-h100-s62-low, logged none: the variable was overwritten; fixed since).
# Session 63: `LEDGER=1 PIN=1 ... low` on an H100 (out-h100-s63-low, with the ledgers: at 8 the default 1.016 of plain decoding).
# Session 67: `LEDGER=1 PIN=1 ... low` on an H100 with `young_runs` the default (out-h100-s67-low: 0.961 of fixed-7
# at 1 request by geometric means, 1.005 at 8, 1.59x at 32).
# `SETS=N` overrides the prompt sets (rounds) of a mode (session 68: `high`'s 3 rounds, one traced, left two untraced
# rounds a cell, which moved 0.64-1.56 at 64-256; ~240 s at 3 on an H100, most of it fixed-1..3's calls).
# Session 68: `LEDGER=1 PIN=1 ... low` and `KV=2.5 LEDGER=1 PIN=1 ... high` on an H100 (out-h100-s68-low, -high; at 8
# the default 0.944 of fixed-7, at 64-256 1.8-2.3x the best fixed k, the dormant default 0.675 at 128 in a noisy lease),
# and 128 alone (out-h100-s68-128, by hand: `--concurrency 128 --prompt-sets 4 --variants none confidence none-again`).
# Session 66: `LEDGER=1 PIN=1 ... low` (out-h100-s66-low) and twice `high` on an H100 with the KV cache at 2.5 GiB
# (then by sed; now `KV=2.5 LEDGER=1 PIN=1 bash .../cmd.sh high`: out-h100-s66-high, -high2, ~240 s each; `low` ~185 s):
# goals 2 and 3 hold on the H100; dspark BENCHMARKS "sixty-second session". `KV=GiB` sets `--kv-cache-gib` (default 6).
# The issue's table on the current drafter (after run1's candidates are decided): plain decoding, fixed k = 1..7 and
# the default at 1 / 8 / 32 (argument "low") or 64 / 128 / 256 (argument "high") requests, batch form, 128 new tokens,
# paired rounds (12 prompt sets low, 3 high: the docstring pool holds ~7,000 prompts). Sessions 20-21 ran it last,
# on drafters accepting 2.0-2.3 of 7 (held-out); this one accepts 3.11. One process a call, ~450-550 s. The profiles
# are measured paired (`--sps-paired`, session 48: each size's plain and k = 7 batches back to back).
# Needs the GGUF and the drafter under ~ as run1 does (`../setup/cmd.sh`, the drafter's parts aa-ac), this call
# carrying ad: carry .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/drafter_stash/drafter_gz_ad
# Since session 48 the GGUF and the drafter can come in five calls instead (`../setup/bundle.sh part_0X`); the drafter is
# then unpacked already and drafter_gz_ad need not be carried.
# Argument "closed" (session 49): the same engines at 8 / 32 / 64 in a closed loop (`--closed-loop 3`: 3 x C prompts a
# call, at most C running, the next admitted as one finishes: serving benchmarks' max concurrency), where a batch's
# uneven drain (session 48: most of the default's loss at 8 in batch form) happens once a call, not once a batch.
# Session 49: the step log's harness (~50 us a step on a CPU) favoured engines taking fewer steps, and its ledger
# reads (~20 us a step, DSpark engines only) cost them up to ~1% at 8: only every EVERY-th round is logged, and the paired
# ratios come from the other rounds (`--step-log-every`; `paired traced` is the logged rounds' median).
# Session 56: `PIN=1 bash .../cmd.sh low` runs the benchmark pinned to cores 2-5 (OMP_NUM_THREADS=2): run23 found
# plain decoding's reading of itself mostly within 1% a round pinned, 0.81-1.11 unpinned. On an H100 `high` needs
# `--kv-cache-gib 2.5` (sed the 6 below).
source benchmarks/results/h200-2026-12-04i/setup/ready.sh   # the GGUF, the drafter, the GPU environment
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
case ${1:-low} in
  low) C="1 8 32"; SETS=${SETS:-12}; SIZES="1 2 4 8 16 32"; EVERY=2;;
  high) C="64 128 256"; SETS=${SETS:-3}; SIZES="1 8 32 64 128 256"; EVERY=3;;
  closed) C="8 32 64"; SETS=${SETS:-4}; SIZES="1 2 4 8 16 32 64"; EVERY=4; LOOP="--closed-loop 3";;
  *) echo "argument: low, high or closed"; exit 2;;
esac
LOGL=""; [ "${LEDGER:-0}" = 1 ] && LOGL="--step-log-ledger"   # session 62: the pause ledgers in the traced rounds
PRE=""; [ "${PIN:-0}" = 1 ] && PRE="taskset -c 2-5" && export OMP_NUM_THREADS=2   # session 56: PIN=1 pins (run23)
W=~/o11${1:-low}; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
timeout 560 $PRE python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency $C \
  --fixed 1 2 3 4 5 6 7 --sps-method steps --sps-in-process --sps-paired --sps-sizes $SIZES --sps-warmup 3 --prompt-sets $SETS \
  --save-sps $W/out/sps_batch.json --variants none confidence fixed-1 fixed-2 fixed-3 fixed-4 fixed-5 fixed-6 fixed-7 \
  --interleave $SETS $LOOP --kv-cache-gib ${KV:-6} --step-log $W/out/steps.jsonl --step-log-every $EVERY $LOGL --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"; xz -9 -T0 -f $W/out/steps.jsonl || gzip -f $W/out/steps.jsonl; tar -C $W -czf $OUT/run_${1:-low}.tar.gz out
grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
