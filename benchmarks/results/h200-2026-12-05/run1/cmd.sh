# Session 47: the default (`overlap_bookkeeping`, a lone probe judged at once: first time on the H200) against
# `confidence-lone2` (`bound_only` 2), `confidence-full` (`prefix_pricing` "full_round": at 2 requests the default's
# rounds verified 9-13 of 14 drafts at the cost of full ones in session 46, `by_running`/step logs), `confidence-plain`
# (`measure_plain_steps`, with this session's plain re-timing runs: a decode profile read slow corrected),
# `confidence-stragglers` (`judge_stragglers`: the batch tail at 8), fixed-7 and plain decoding at 1, 2 and 8 requests,
# 24 prompt sets,
# PROCS processes (argument 1; default "a b"). Needs the GGUF (`../setup/cmd.sh`, seven parts) and the drafter's parts
# aa-ac under ~ (session 45's `h200-2026-12-04g/setup/cmd.sh`, one call a part), this call carrying ad. The step logs come back as xz (as committed since session 47).
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/drafter_stash/drafter_gz_ad
# Since session 48 the GGUF and the drafter can come in five calls instead (`../setup/bundle.sh part_0X`); the drafter is
# then unpacked already and drafter_gz_ad need not be carried.
# Session 49 (before any run): only even rounds are logged and the paired ratios come from the odd ones, untraced
# (`--step-log-every 2`: the log's harness favoured engines taking fewer steps, its ledger reads cost DSpark
# engines up to ~1% at 8); the ledger fields are no longer logged (`--step-log-ledger` would add them).
source benchmarks/results/h200-2026-12-04i/setup/ready.sh   # the GGUF, the drafter, the GPU environment
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf; B=packages/deepinfer-dspark/benchmarks
for P in ${1:-a b}; do
  W=~/o10$P; rm -rf $W; mkdir -p $W/out; S0=$SECONDS
  timeout 275 python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 1 2 8 \
    --fixed 7 --sps-method steps --sps-in-process --sps-sizes 1 2 4 8 --sps-warmup 3 --prompt-sets 24 \
    --save-sps $W/out/sps_batch.json --variants none confidence confidence-lone2 confidence-full confidence-plain confidence-stragglers fixed-7 \
    --interleave 24 --kv-cache-gib 8 --step-log $W/out/steps.jsonl --step-log-every 2 --out $W/out/dspark_batch.md > $W/out/bench_batch.log 2>&1
  echo "process $P: rc $? in $((SECONDS - S0)) s"; xz -9 -T0 -f $W/out/steps.jsonl || gzip -f $W/out/steps.jsonl; tar -C $W -czf $OUT/run_$P.tar.gz out
  grep -E "^[0-9]+ " $W/out/bench_batch.log | sed -E "s/'runs': [0-9]+, //; s/draft graphs.*//" | cut -c1-420
  grep -E "rror|Trace" $W/out/bench_batch.log | tail -5
done
