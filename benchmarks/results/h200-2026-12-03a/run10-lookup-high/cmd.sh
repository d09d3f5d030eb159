# Session 32, call 10: no drafter left (the machine went back after call 7), so only prompt lookup priced by
# load (`ngram-aware-7`, `RoundCosts`) at 32 / 64 requests, batch form then closed loop (--closed-loop 2), 8 prompt
# sets, step logs. `--drafter` is unused by these variants; the speculative profile is call 4's (never read here).
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf/part_ac
ls ~/gguf/part_aa ~/gguf/part_ab || exit 3
cp .cache/gguf/part_ac ~/gguf/ && mkdir -p ~/.cache/deepinfer/models && cat ~/gguf/part_a? > ~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
W=~/o10; rm -rf $W; mkdir -p $W/b $W/c
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
B=packages/deepinfer-dspark/benchmarks
R=benchmarks/results/h200-2026-12-03a/run4-low
for form in batch closed; do
  extra=""; lim=105; [ $form = closed ] && extra="--closed-loop 2" && lim=150
  timeout $lim python3 $B/bench_dspark.py --target $T --drafter unused --spec-sps $R/spec_sps_batch.json \
    --max-tokens 128 --concurrency 32 64 --fixed 7 --sps-method steps --sps-in-process --sps-sizes 1 2 4 8 16 32 64 \
    --sps-warmup 3 --prompt-sets 8 $extra --save-sps $OUT/sps_$form.json \
    --variants none ngram-aware-7 none-again --interleave 8 \
    --kv-cache-gib 8 --step-log $W/${form:0:1}/steps.jsonl --out $OUT/dspark_$form.md > $OUT/bench_$form.log 2>&1
  echo "$form rc $? at ${SECONDS} s"
  gzip -f $W/${form:0:1}/steps.jsonl; cp $W/${form:0:1}/steps.jsonl.gz $OUT/steps_$form.jsonl.gz
  grep -E "^[0-9]+ |profile at" $OUT/bench_$form.log | grep -v "step times" | sed -E "s/'runs': [0-9]+, //" | cut -c1-300
  grep -E "rror|Trace" $OUT/bench_$form.log | tail -5
done
mkdir -p ~/spec && mv $OUT/spec_sps_*.json ~/spec/ 2>/dev/null  # 8 files at most come back
