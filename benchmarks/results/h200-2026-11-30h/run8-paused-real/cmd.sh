# Session 11, call 8: the real target and drafter, the proposer paused for good (paused: never drafts; paused-blind: never drafts nor buffers), 7 paired rounds at 8, 32, 128, cProfile at 32.
source tools/gpu_env.sh >/dev/null 2>&1; T=~/.cache/deepinfer/models/SmolLM2-135M-Instruct.Q4_1.gguf
timeout 300 python3 packages/deepinfer-dspark/benchmarks/bench_paused.py --target $T --drafter ~/drafter_real --spec-sps ~/spec_sps.json --concurrency 8 32 128 --rounds 7 --out $OUT/paused.md --profile $OUT/profile.txt --profile-at 32 > $OUT/paused.log 2>&1
grep -v "USDT\|_warn" $OUT/paused.log | tail -14 | cut -c1-300; cat $OUT/paused.md
