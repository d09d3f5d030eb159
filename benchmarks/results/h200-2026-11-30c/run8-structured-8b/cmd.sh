# Session 6, call 8: structured-output overhead on a Llama-3-8B-shaped model (random weights made
# on the device, SmolLM2 tokenizer and vocabulary), then the SmolLM2-135M shape in the same call.
source tools/gpu_env.sh >/dev/null 2>&1
timeout 150 python3 packages/deepinfer-core/benchmarks/structured_overhead.py --random-weights .cache/smol_tok --shape llama3-8b \
  --device cuda --dtype bfloat16 --batch 1 64 --tokens 64 --repeats 3 --settle --timeline > $OUT/structured_8b.txt 2>&1
grep -v Writing $OUT/structured_8b.txt | tail -5
timeout 80 python3 packages/deepinfer-core/benchmarks/structured_overhead.py --random-weights .cache/smol_tok \
  --device cuda --dtype bfloat16 --batch 1 64 --tokens 64 --repeats 3 --settle --timeline > $OUT/structured_135m.txt 2>&1
grep -v Writing $OUT/structured_135m.txt | tail -5
