# Session 21, call 7 (a fresh machine, the lease's last ~7 minutes): where the host time of a
# confidence-scheduled round goes, against fixed-7's. Calls 3 and 5 timed confidence's drafted
# rounds at 1 request at 2.73-2.78 ms (median) against fixed-7's 2.50-2.63 with the same drafts
# verified (6.92 a round, 3.26 accepted). Here a random-weight SmolLM2-shaped target and a random
# drafter (bench_paused.random_drafter), and profiles under which drafting always pays at 1 request
# (fake_*.json: rounds 5x a plain step's rate), so confidence drafts and verifies all 7 every
# round, as fixed-7 does; each engine alone (bench_dspark profiles only without --interleave),
# then a cProfile of one more call per engine (profile_diff.py reads the .prof files).
# Carry: .cache/gpu_wheels .cache/smollm2_shape
source tools/gpu_env.sh > ~/env.log 2>&1 || tail -5 ~/env.log
export PYTHONUNBUFFERED=1
D=benchmarks/results/h200-2026-12-01f/run7-host-profile
rm -rf ~/shape && cp -r .cache/smollm2_shape ~/shape && python3 packages/deepinfer-dspark/benchmarks/random_target.py ~/shape
(cd packages/deepinfer-dspark/benchmarks && python3 -c "
import shutil; from pathlib import Path; from bench_paused import random_drafter
shutil.copytree(random_drafter(Path.home() / 'shape', 7), Path.home() / 'rdrafter')")
timeout 240 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target ~/shape --drafter ~/rdrafter \
  --max-tokens 128 --concurrency 1 --fixed 7 --sps $D/fake_sps.json --spec-sps $D/fake_spec_sps.json \
  --variants none confidence fixed-7 --kv-cache-gib 4 \
  --profile $OUT/profile.txt --profile-at 1 --out $OUT/dspark.md > $OUT/bench.log 2>&1
echo "bench rc $? at ${SECONDS} s"
ls $OUT
grep -E "^[0-9]+ " $OUT/bench.log | sed -E "s/'per-user tok\/s': [0-9.]+, //; s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-300
grep -E "rror|Trace" $OUT/bench.log | tail -5
