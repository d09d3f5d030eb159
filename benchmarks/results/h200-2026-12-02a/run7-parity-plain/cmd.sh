# Session 24, call 7: call 6 found the paused engine's drafter context equal to the always-drafting
# engine's up to bfloat16 rounding, but in 2 of 4 replies the two engines' greedy replies
# differed (then the contexts, from there on). bfloat16 near-ties of a random target, or a
# verification that is not exact on the GPU? Both engines' replies against plain decoding's, in
# bfloat16 and in float32 (where near-ties are rare).
# Carry: .cache/gpu_wheels .cache/smolcfg
source tools/gpu_env.sh > /dev/null 2>&1
export PYTHONUNBUFFERED=1
cd packages/deepinfer-dspark/benchmarks
python3 random_target.py ../../../.cache/smolcfg > $OUT/random_target.log 2>&1 || exit 3
timeout 150 python3 context_parity.py --target ../../../.cache/smolcfg --requests 4 --max-tokens 128 --plain > $OUT/parity_bf16.log 2>&1
echo "bf16 rc $? at ${SECONDS} s"
timeout 150 python3 context_parity.py --target ../../../.cache/smolcfg --requests 4 --max-tokens 128 --plain --dtype float32 > $OUT/parity_fp32.log 2>&1
echo "fp32 rc $? at ${SECONDS} s"
grep -E "reply|parity|lengths|rror" $OUT/parity_bf16.log $OUT/parity_fp32.log | cut -c1-330
