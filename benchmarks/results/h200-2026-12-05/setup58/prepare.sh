#!/usr/bin/env bash
# Session 58: on the CPU machine, before the first GPU call (repository root, after tools/setup.sh). Makes what the
# GPU calls carry, all under the ignored .cache: the GPU wheels (.cache/gpu_wheels, docs/gpu_plan.md), the GGUF in
# three parts for `cmd.sh part_00` .. `part_02` (.cache/gguf), and, where the drafter stash survived
# (.cache/drafter_stash/drafter_gz_aa .. _ad), the five-part bundle for `../../h200-2026-12-04i/setup/bundle.sh`
# (.cache/bundle): with the bundle, skip setup58 and train58. Prints what to run next.
set -euo pipefail
PY=.venv/bin/python
mkdir -p .cache/gpu_wheels/build .cache/gguf
$PY -m pip download -q --no-deps gguf==0.19.0 -d .cache/gpu_wheels
$PY -m pip download -q --no-deps hatchling pathspec pluggy trove-classifiers -d .cache/gpu_wheels/build
GGUF=$($PY -m deepinfer_core.assets | tail -1)   # fetched into ~/.cache/deepinfer on first use
[ -f .cache/gguf/part_02 ] || split -n 3 -d "$GGUF" .cache/gguf/part_
if ls .cache/drafter_stash/drafter_gz_aa .cache/drafter_stash/drafter_gz_ab .cache/drafter_stash/drafter_gz_ac \
    .cache/drafter_stash/drafter_gz_ad >/dev/null 2>&1; then
  rm -rf /tmp/bsrc && mkdir -p /tmp/bsrc .cache/bundle && cp "$GGUF" /tmp/bsrc/SmolLM2-135M-Instruct.Q4_1.gguf
  cat .cache/drafter_stash/drafter_gz_a? > /tmp/bsrc/drafter.tar.gz
  tar -cf /tmp/bundle.tar -C /tmp/bsrc SmolLM2-135M-Instruct.Q4_1.gguf drafter.tar.gz
  split -n 5 -d /tmp/bundle.tar .cache/bundle/part_ && rm -rf /tmp/bsrc /tmp/bundle.tar
  echo "next: five calls of h200-2026-12-04i/setup/bundle.sh part_00 .. part_04, each carrying .cache/bundle/part_0X"
else
  echo "no drafter stash: three calls of h200-2026-12-05/setup58/cmd.sh part_00 .. part_02 (carry .cache/gguf/part_0X),"
  echo "then train58/cmd.sh (carry the GPU wheels; ~500 s; its four drafter_gz_a? go to .cache/drafter_stash)"
fi
echo "tracked tree: $(git ls-files -z | du -cb --files0-from=- | tail -1 | cut -f1) bytes (a call carries 64 MiB in all)"
