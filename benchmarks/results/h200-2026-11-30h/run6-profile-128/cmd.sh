# Session 11, call 6: one engine at a time (none, confidence) at 128 requests, with a cProfile and a torch.profiler table of one more run each.
source tools/gpu_env.sh >/dev/null 2>&1; T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 260 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter_real --max-tokens 128 --concurrency 128 --variants none confidence --sps ~/sps.json --spec-sps ~/spec_sps.json --profile $OUT/profile.txt --torch-profile $OUT/torch_profile.txt --profile-at 128 --out $OUT/dspark.md > $OUT/bench.log 2>&1
grep -E "^[0-9]+ |rror|Trace" $OUT/bench.log | cut -c1-300
