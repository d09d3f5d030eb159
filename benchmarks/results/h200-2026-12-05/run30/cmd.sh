# Session 59 (prepared, not run: no device lent). The first call after setup on the next lease (~40 s): the GPU
# host's own `OutputProcessor.process` time a step with the text held to the end (this session's engine) and token
# by token as before, the same script and table as packages/deepinfer-core/BENCHMARKS.md's session-59 entry (there:
# this repository's 2-core CPU, 6-7x), pinned as the table's calls are (cores 2-5). With the session-57 table's step
# times on the H200 (64 / 128 / 256 requests: ~3.7 / 3.7 / 6.7 ms), it says what share of a step the change took
# off there before the table runs again (docs/gpu_plan.md, "Still to run", session 59). Carry nothing beyond the
# tree (the GGUF must be in place: the five bundle calls). Dry-run on this CPU:
# `bash benchmarks/results/h200-2026-12-05/run30/cmd.sh` with OUT set to a folder.
source benchmarks/results/h200-2026-12-04i/setup/ready.sh
S0=$SECONDS
OMP_NUM_THREADS=1 taskset -c 2-5 python3 packages/deepinfer-core/benchmarks/output_processing.py --repeats 3 \
  | tee $OUT/output_processing.md
echo "rc ${PIPESTATUS[0]} in $((SECONDS - S0)) s"
