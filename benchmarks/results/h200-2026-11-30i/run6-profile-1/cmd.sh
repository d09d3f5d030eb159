# Session 12, call 6 (right after call 5): at 1 request confidence ran at 0.93x plain while fixed-3
# ran at 1.03x: one engine at a time (none, confidence, fixed-3, fixed-7) on call 3's profiles,
# with a cProfile of the engine thread and a torch.profiler table at 1 request.
source tools/gpu_env.sh >/dev/null 2>&1; T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 240 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real \
  --max-tokens 128 --concurrency 1 --fixed 3 7 --variants none confidence fixed-3 fixed-7 \
  --sps ~/sps.json --spec-sps ~/spec_sps.json --profile $OUT/profile.txt --torch-profile $OUT/torch_profile.txt \
  --profile-at 1 --out $OUT/dspark.md > $OUT/bench.log 2>&1
grep -E "^[0-9]+ |rror|Trace" $OUT/bench.log | cut -c1-400; tail -6 $OUT/dspark.md
