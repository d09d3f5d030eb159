# Session 26, call 3 (right after call 2, its drafter): where confidence-whole's drafted round
# loses ~0.23 ms to fixed-7's at 1 request (session 25, call 7: same drafts verified, rounds 3.53
# against 3.30 ms). One engine at a time, --deterministic, session 25's call 7 profiles (no
# profiling of rates here): a cProfile and a torch.profiler trace of one run at 1 request per
# engine, then profile_diff.py (host functions) and gpu_gaps.py (the GPU's idle gaps by host phase).
ls ~/drafter_real/config.json || exit 3
source tools/gpu_env.sh >/dev/null 2>&1
export PYTHONUNBUFFERED=1
W=~/o3; rm -rf $W; mkdir -p $W
T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
P=benchmarks/results/h200-2026-12-02b/run7-whole
B=packages/deepinfer-dspark/benchmarks
timeout $((LIMIT - 60)) python3 $B/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 2 --fixed 7 --sps $P/sps.json --spec-sps $P/spec_sps.json --deterministic \
  --variants none confidence-whole fixed-7 --step-times --profile $W/prof.txt --torch-profile $W/torch.txt \
  --profile-at 1 --kv-cache-gib 8 --out $W/dspark_alone.md > $OUT/bench_alone.log 2>&1
echo "alone rc $? at ${SECONDS} s"
ls $W
python3 $B/gpu_gaps.py $W/torch-*-at-1.trace.json.gz > $OUT/gaps.md 2>&1; cat $OUT/gaps.md
python3 $B/profile_diff.py $W/prof-fixed-7-at-1.prof $W/prof-confidence-whole-at-1.prof --top 40 > $OUT/prof_diff.md 2>&1
head -60 $OUT/prof_diff.md
cp $W/prof.txt $W/torch.txt $OUT/; tar czf $OUT/run3.tgz -C $W .
grep -E "^[0-9]+ " $OUT/bench_alone.log | sed -E "s/draft graphs.*//" | cut -c1-400
grep -E "rror|Trace" $OUT/bench_alone.log | tail -5
