# Session 24, call 6 (a fresh machine; the trained drafter is gone): calls 3 and 5 measured, at 1
# request on one reply, 3.7 tokens a round for fixed-7 and 2.1-3.0 for confidence's drafted rounds,
# which come after pauses. Is the paused engine's drafter context (buffered features, flushes
# through the projection graph, shorter verifications padded in the verification graphs) the
# always-drafting engine's? context_parity.py on the SmolLM2-shaped target with random weights and
# a random drafter (on the CPU the contexts matched to 4e-6).
# Carry: .cache/gpu_wheels .cache/smolcfg
source tools/gpu_env.sh > /dev/null 2>&1
export PYTHONUNBUFFERED=1
cd packages/deepinfer-dspark/benchmarks
python3 random_target.py ../../../.cache/smolcfg > $OUT/random_target.log 2>&1 || exit 3
timeout 200 python3 context_parity.py --target ../../../.cache/smolcfg --requests 4 --max-tokens 128 > $OUT/parity.log 2>&1
echo "parity rc $? at ${SECONDS} s"
timeout 150 python3 context_parity.py --target ../../../.cache/smolcfg --requests 4 --max-tokens 128 --draft-run 1 --pause 3 > $OUT/parity_short.log 2>&1
echo "parity (short pauses) rc $? at ${SECONDS} s"
grep -E "reply|parity|lengths|rror" $OUT/parity.log $OUT/parity_short.log | cut -c1-400
