# Session 11, call 9: as call 8 at 128 requests, 3 rounds, with cProfile and torch.profiler tables.
source tools/gpu_env.sh >/dev/null 2>&1; T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 250 python3 packages/deepinfer-dspark/benchmarks/bench_paused.py --target $T --drafter ~/drafter_real --spec-sps ~/spec_sps.json --concurrency 128 --rounds 3 --out $OUT/paused.md --torch-profile $OUT/torch_profile.txt --profile $OUT/profile.txt --profile-at 128 > $OUT/paused.log 2>&1
tail -4 $OUT/paused.md
