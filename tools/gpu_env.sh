# Source on the GPU machine (repository root): installs deepinfer-kernels (compiled parts) and
# deepinfer-dspark (for its entry points and `deepinfer-dspark` command), the wheels the GPU image
# lacks (pre-downloaded on the CPU machine into .cache/gpu_wheels, build tools into
# .cache/gpu_wheels/build; see docs/gpu_plan.md), and points PYTHONPATH at the other packages'
# sources. Usage: `source tools/gpu_env.sh`.
export NCCL_NVLS_ENABLE=0
python3 -m pip install -q --no-deps .cache/gpu_wheels/*.whl
python3 -c "import hatchling" 2>/dev/null || python3 -m pip install -q --no-deps .cache/gpu_wheels/build/*.whl
(cd packages/deepinfer-kernels && python3 -m pip install -q --no-deps --no-build-isolation .)
(cd packages/deepinfer-dspark && python3 -m pip install -q --no-deps --no-build-isolation .)
export PYTHONPATH=$PWD/packages/deepinfer-core/src:$PWD/packages/deepinfer-recipe/src:$PWD/packages/deepinfer-cli/src
