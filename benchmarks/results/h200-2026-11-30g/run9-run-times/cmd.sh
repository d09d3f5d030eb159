# Session 10, call 9 (right after call 8, the last 60 s of device time): per-run wall time of no
# speculation vs confidence at 8 chat requests, and a cProfile of one confidence run.
source tools/gpu_env.sh >/dev/null 2>&1
timeout 40 python3 benchmarks/results/h200-2026-11-30g/run9-run-times/diag.py 2>&1 | grep -v "USDT\|_warn\|Warn" | cut -c1-170 | tail -45
