# Session 7, call 7: where a fixed-3 round's time goes at 8 and 32 requests (cProfile of the
# engine thread; random-weight target, 20-step drafter; draft round and projection in graphs).
source tools/gpu_env.sh >/dev/null 2>&1
T=$(python3 -c "import sys; sys.path.insert(0,'packages/deepinfer-core/benchmarks'); from structured_overhead import random_checkpoint; from pathlib import Path; print(random_checkpoint(Path('.cache/smol_tok')))" 2>/dev/null | tail -1)
timeout 60 deepinfer-dspark train --target $T --out ~/drafter --num-prompts 64 --max-new-tokens 32 --steps 20 --num-calibration-prompts 8 > /dev/null 2>&1
python3 -c "
from deepinfer_dspark.sps import SPSProfile
SPSProfile([1, 2, 512], [300.0, 1000.0, 100.0], {'method': 'hand-made'}).save('$OUT/sps.json')
SPSProfile([4, 8, 2048], [200.0, 190.0, 10.0], {'method': 'hand-made'}).save('$OUT/spec_sps.json')"
for c in 8 32; do
timeout 70 python3 packages/deepinfer-dspark/benchmarks/bench_dspark.py --target $T --drafter ~/drafter --max-tokens 128 \
  --concurrency $c --fixed 3 --variants fixed-3 --sps $OUT/sps.json --spec-sps $OUT/spec_sps.json \
  --profile $OUT/profile_c$c.txt > $OUT/bench_c$c.log 2>&1
grep -v "^|" $OUT/bench_c$c.log | tail -1
done
