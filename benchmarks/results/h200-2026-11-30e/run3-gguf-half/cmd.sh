# Session 8, call 3: the first half of the SmolLM2-135M-Instruct GGUF onto the machine (call 4,
# issued at once, carries the second half), and a cProfile of fixed k=3 at 1 and 8 requests on the
# random-weight target with the paged context pool (where a round's host time goes now).
mkdir -p ~/gguf && cp .cache/gguf/part_aa ~/gguf/
source tools/gpu_env.sh >/dev/null 2>&1
T=$(python3 -c "import sys; sys.path.insert(0,'packages/deepinfer-core/benchmarks'); from structured_overhead import random_checkpoint; from pathlib import Path; print(random_checkpoint(Path('.cache/smol_tok')))" 2>/dev/null | tail -1)
timeout 80 deepinfer-dspark train --target $T --out ~/drafter --num-prompts 64 --max-new-tokens 32 --steps 20 --num-calibration-prompts 8 > /dev/null 2>&1
python3 -c "
from deepinfer_dspark.sps import SPSProfile
SPSProfile([1, 2, 512], [300.0, 1000.0, 100.0], {'method': 'hand-made'}).save('$OUT/sps.json')
SPSProfile([4, 8, 2048], [200.0, 190.0, 10.0], {'method': 'hand-made'}).save('$OUT/spec_sps.json')"
for c in 1 8; do
timeout 50 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter --max-tokens 128 \
  --concurrency $c --fixed 3 --variants fixed-3 --sps $OUT/sps.json --spec-sps $OUT/spec_sps.json \
  --profile $OUT/profile_c$c.txt > $OUT/bench_c$c.log 2>&1
grep -v "^|" $OUT/bench_c$c.log | grep -v "USDT\|_warn" | tail -1
done
ls -la ~/gguf
