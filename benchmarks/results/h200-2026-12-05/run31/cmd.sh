# Session 60 (prepared); ran in session 61 on an H100 (out-h100-s61: the default +1.5% a matched decode step, plain decoding again +3.3 / -0.1%; dspark BENCHMARKS session 61). Is the default's dormant decode step dearer than plain decoding's on the H200's host? In
# the table's traced rounds the default (drafting nothing) ran its decode steps +1-6% over plain decoding's matched
# steps at 64-256 (session 57) and +3-10% (session 60, before a jump of +60% from step 84 at 256), where this CPU's
# counts say +1.2% Python calls. Here every round is traced at 128 / 256 requests: plain decoding, the default,
# `dormant-stub` (the default's engine with a proposer that is always dormant: core's share alone) and plain
# decoding again (the noise floor), 8 rounds, pinned, the profiles of session 57's H200 run24 given (the default
# drafts nothing at 128-256 with either; saves the ~120 s of measuring them). Read with `step_log_report.py
# OUT/steps.jsonl.xz` (matched steps, the median extra ms a decode step over `none`) and `paired_pool.py
# OUT/bench_batch.log --against none-again`. The step log's ledger reads cost the DSpark engines ~20 us a step
# (session 49): the stub shows what is core's. Setup as docs/gpu_plan.md step 0; carry the GPU wheels; ~150-250 s.
# Dry-run on this CPU: `DRY=1 bash .../run31/cmd.sh` (a random drafter, float32, 2 / 4 requests, 8 tokens).
B=packages/deepinfer-dspark/benchmarks; P=benchmarks/results/h200-2026-12-05/run24/out-h200-high; SETS=${SETS:-8}
if [ "${DRY:-0}" = 1 ]; then
  OUT=${OUT:-/tmp/run31-out}; mkdir -p $OUT; T=$(ls -d ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf)
  D=${DRAFTER:-~/drafter}; PY=.venv/bin/python; RUN="--concurrency 2 4 --max-tokens 8 --dtype float32"; SETS=2
else
  source benchmarks/results/h200-2026-12-04i/setup/ready.sh; T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
  D=~/drafter_real; PY=python3; RUN="--concurrency 128 256 --max-tokens 128 --kv-cache-gib 2.5"
fi
export OMP_NUM_THREADS=2; W=~/o31; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
timeout ${LIMIT:-400} taskset -c ${CORES:-2-5} $PY $B/bench_dspark.py --target $T --drafter $D $RUN --fixed 7 \
  --sps $P/sps_batch.json --spec-sps $P/spec_sps_batch.json --prompt-sets $SETS --interleave $SETS \
  --variants none confidence dormant-stub none-again --step-log $W/out/steps.jsonl --step-log-every 1 \
  --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
echo "rc $? in $((SECONDS - S0)) s"; xz -9 -T0 -f $W/out/steps.jsonl || gzip -f $W/out/steps.jsonl
tar -C $W -czf $OUT/run31.tar.gz out
$PY $B/step_log_report.py $W/out/steps.jsonl.* | grep -A8 "Steps run as none"
$PY $B/paired_pool.py $W/out/bench_batch.log --against none-again | grep -v "| none |"
grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
