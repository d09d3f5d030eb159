# Session 13, call 7 (fresh machine): the deterministic GC-during-capture test (call 6's version
# passed without the fix too: the garbage was collected before the capture began), its negative
# control (gc.disable made a no-op: it must fail), and the core's graph-padding tests pinned
# to the CPU (they failed on CUDA because the runner picked the GPU).
source tools/gpu_env.sh >/dev/null 2>&1
timeout 90 python3 -m pytest -q -rf --tb=short -p no:cacheprovider packages/deepinfer-dspark/tests/test_draft_graph.py \
  packages/deepinfer-core/tests/test_runner_cuda_graph_padding.py > $OUT/tests.log 2>&1
tail -2 $OUT/tests.log
timeout 60 python3 -c "import gc, sys, pytest; gc.disable = lambda: None; sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '--tb=line', 'packages/deepinfer-dspark/tests/test_draft_graph.py', '-k', 'garbage']))" > $OUT/negative.log 2>&1
echo "negative control exit $? (1 = the test failed without the fix, as it must)"; grep -E "passed|failed|Error" $OUT/negative.log | tail -3 | cut -c1-200
