# Session 12, call 5 (right after call 4): why confidence drafts at 8 requests and loses (0.64x):
# one engine at a time (none, confidence, fixed-7) at 8 requests on call 3's profiles, with a
# cProfile of the engine thread and a torch.profiler table.
source tools/gpu_env.sh >/dev/null 2>&1; T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 240 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 8 --fixed 7 --variants none confidence fixed-7 \
  --sps ~/sps.json --spec-sps ~/spec_sps.json --profile $OUT/profile.txt --torch-profile $OUT/torch_profile.txt \
  --profile-at 8 --out $OUT/dspark.md > $OUT/bench.log 2>&1
grep -E "^[0-9]+ |rror|Trace" $OUT/bench.log | cut -c1-400; tail -5 $OUT/dspark.md
