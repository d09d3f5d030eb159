# Session 29, call 2 (issued right after call 1): the second third of the GGUF, then session 28's
# prompt-lookup tests (LookupAssist, ngram, the engine's proposers, core's dormant steps) under the
# machine's Python 3.12 / torch 2.11.
# Carry: .cache/gpu_wheels/gguf-0.19.0-py3-none-any.whl .cache/gpu_wheels/build .cache/gguf/part_ab
ls ~/gguf/part_aa || exit 3
cp .cache/gguf/part_ab ~/gguf/
source tools/gpu_env.sh > $OUT/env.log 2>&1
timeout 200 python3 -m pytest -q -rf --tb=short -p no:cacheprovider packages/deepinfer-dspark/tests/test_lookup_assist.py \
  packages/deepinfer-dspark/tests/test_ngram.py packages/deepinfer-dspark/tests/test_decline_features.py \
  packages/deepinfer-core/tests/test_dormant_steps.py > $OUT/pytest.log 2>&1
echo "pytest rc $? at ${SECONDS} s"; tail -4 $OUT/pytest.log
