# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The backend registry: which implementation of an op runs for a call.

Every public op in `deepinfer_kernels.ops` asks the registry for an implementation and
calls it. Implementations are declared by the backend packages (`backends/<name>/`) as
`Impl` records; the callable itself is named by a "module:attribute" string and imported
only when the implementation is first chosen, so importing `deepinfer_kernels` never
imports triton, a compiled extension or `torch_npu`, and never initialises a GPU.

Selection order for one call (per the design in docs/structures.md):
  1. an explicit `backend=` argument (an error if it cannot run the call);
  2. the environment override `DEEPINFER_KERNEL_BACKEND`, e.g. `rms_norm:reference,*:triton`
     (a preference: when the named backend cannot run the call, selection goes on);
  3. the highest-priority implementation that is available and supports the call;
  4. `reference`, which runs everything on every device.
The available candidates per (op, device type, dtype, override) are computed once and cached;
the `supports(*args, **kwargs)` predicate is evaluated per call because it may look at shapes.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

logger = logging.getLogger("deepinfer_kernels")

ENV_VAR = "DEEPINFER_KERNEL_BACKEND"
REFERENCE = "reference"


def _always(*args: Any, **kwargs: Any) -> bool:
    return True


def _always_available(device_type: str) -> bool:
    return True


@dataclass(frozen=True)
class Impl:
    """One implementation of one op.

    Attributes:
        op: Public op name, e.g. "rms_norm".
        backend: Backend name: "reference", "triton", "cuda", "cpu", "ascend" or an
            out-of-tree name.
        target: "package.module:function" of the callable; imported on first use.
        devices: Device types (`torch.device.type`) on which selection may pick this
            implementation automatically; "*" means every device type (the reference).
        explicit_devices: Extra device types it runs on only when named explicitly (by
            `backend=` or the environment variable), e.g. triton on "cpu" under
            TRITON_INTERPRET=1.
        priority: Higher wins among automatic candidates.
        dtypes: Dtypes of the op's main tensor it handles; None means every dtype the op
            accepts. Checked before `supports`; the test suite enumerates only these.
        available: Cheap probe `available(device_type) -> bool`, run once per (op, device
            type, dtype): is the toolchain importable, is the device there. Called at the first
            op call, never at package import.
        supports: Predicate on the op's actual arguments (dtype, head size, ...).
    """

    op: str
    backend: str
    target: str
    devices: tuple[str, ...]
    explicit_devices: tuple[str, ...] = ()
    priority: int = 0
    dtypes: tuple[torch.dtype, ...] | None = None
    available: Callable[[str], bool] = _always_available
    supports: Callable[..., bool] = _always

    def handles(self, dtype: torch.dtype | None) -> bool:
        """Whether `dtype` (of the op's main tensor) is among the declared dtypes."""
        return self.dtypes is None or dtype in self.dtypes

    def runs_on(self, device_type: str, explicit: bool) -> bool:
        """Whether this implementation may run on `device_type` (explicitly named or not)."""
        if "*" in self.devices or device_type in self.devices:
            return True
        return explicit and device_type in self.explicit_devices


@dataclass
class Registry:
    """A set of `Impl`s plus the per-key candidate cache.

    A `Registry` is a plain object; the package keeps one default instance (see
    `default_registry`) and tests build their own.
    """

    impls: dict[str, list[Impl]] = field(default_factory=dict)
    _loaded: dict[str, Callable[..., Any]] = field(default_factory=dict)
    _candidates: dict[tuple, tuple[Impl, ...]] = field(default_factory=dict)
    _availability: dict[tuple[str, str, str], bool] = field(default_factory=dict)
    _fallback_logged: set[tuple] = field(default_factory=set)

    def register(self, impl: Impl) -> None:
        """Adds an implementation; a second one for the same (op, backend) is an error."""
        existing = self.impls.setdefault(impl.op, [])
        if any(e.backend == impl.backend for e in existing):
            raise ValueError(f"backend: {impl.backend!r} already registered for op {impl.op!r}")
        existing.append(impl)
        self._candidates.clear()

    def backends(self, op: str) -> list[str]:
        """Names of all backends registered for `op` (available or not)."""
        return [i.backend for i in self.impls.get(op, [])]

    def get(self, op: str, backend: str) -> Impl:
        """The `Impl` of `op` from `backend`; ValueError when there is none."""
        for impl in self.impls.get(op, []):
            if impl.backend == backend:
                return impl
        raise ValueError(f"backend: no implementation of op {op!r} in backend {backend!r} "
                         f"(registered: {self.backends(op)})")

    def is_available(self, impl: Impl, device_type: str) -> bool:
        """`impl.available(device_type)`, probed once per (op, backend, device type)."""
        key = (impl.op, impl.backend, device_type)
        if key not in self._availability:
            self._availability[key] = bool(impl.available(device_type))
        return self._availability[key]

    def load(self, impl: Impl) -> Callable[..., Any]:
        """Imports and returns the callable behind `impl.target` (cached)."""
        key = impl.op + "/" + impl.backend
        fn = self._loaded.get(key)
        if fn is None:
            module, _, attr = impl.target.partition(":")
            fn = getattr(importlib.import_module(module), attr)
            self._loaded[key] = fn
        return fn

    def select(self, op: str, device: torch.device, dtype: torch.dtype | None,
               args: tuple, kwargs: dict, backend: str | None = None) -> Impl:
        """Chooses the implementation for one call (see the module docstring for the order).

        Raises:
            ValueError: `backend` names an implementation that is missing, unavailable, not
                runnable on `device`, or whose `supports` rejects the arguments.
        """
        device_type = device.type
        if backend is not None:
            impl = self.get(op, backend)
            if not impl.runs_on(device_type, explicit=True):
                raise ValueError(f"backend: {backend!r} does not run op {op!r} on device type "
                                 f"{device_type!r}")
            if not self.is_available(impl, device_type):
                raise ValueError(f"backend: {backend!r} is not available for op {op!r} here")
            if not impl.handles(dtype):
                raise ValueError(f"backend: {backend!r} does not handle dtype {dtype} for op {op!r}")
            if not impl.supports(*args, **kwargs):
                raise ValueError(f"backend: {backend!r} does not support these arguments of op {op!r} "
                                 f"(its layout or size limits; tensors: {_describe(args)})")
            return impl
        for impl in self._candidates_for(op, device_type, dtype):
            if impl.supports(*args, **kwargs):
                return impl
        self._log_fallback(op, device_type, dtype)
        return self.get(op, REFERENCE)

    def _candidates_for(self, op: str, device_type: str, dtype: torch.dtype | None
                        ) -> tuple[Impl, ...]:
        override = os.environ.get(ENV_VAR, "")
        key = (op, device_type, dtype, override)
        cached = self._candidates.get(key)
        if cached is not None:
            return cached
        preferred = parse_override(override).get(op) or parse_override(override).get("*")
        ordered: list[Impl] = []
        if preferred is not None:
            try:
                impl = self.get(op, preferred)
            except ValueError:
                impl = None
            if (impl is not None and impl.runs_on(device_type, explicit=True)
                    and impl.handles(dtype) and self.is_available(impl, device_type)):
                ordered.append(impl)
            elif preferred != REFERENCE:
                logger.info("%s=%s: backend %r cannot run op %r on %r; selecting by priority",
                            ENV_VAR, override, preferred, op, device_type)
        auto = [i for i in self.impls.get(op, []) if i.runs_on(device_type, explicit=False)
                and i not in ordered and i.handles(dtype) and self.is_available(i, device_type)]
        auto.sort(key=lambda i: -i.priority)
        ordered.extend(auto)
        result = tuple(ordered)
        self._candidates[key] = result
        return result

    def _log_fallback(self, op: str, device_type: str, dtype: torch.dtype | None) -> None:
        key = (op, device_type, dtype)
        if key not in self._fallback_logged:
            self._fallback_logged.add(key)
            logger.info("op %r on %r/%s: no implementation supports the call; using reference",
                        op, device_type, dtype)


def _describe(args: tuple) -> str:
    """Shape and strides of the tensor arguments, for error messages."""
    parts = [f"#{i} {tuple(a.shape)} stride {a.stride()}" for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    return "; ".join(parts[:6])


def parse_override(value: str) -> dict[str, str]:
    """Parses `DEEPINFER_KERNEL_BACKEND`: comma-separated `op:backend` pairs, `*` for all ops.

    A bare backend name (no colon) means `*:name`.

    Raises:
        ValueError: an entry is malformed: an empty name, or an op or backend name that is not
            an identifier (e.g. `rms_norm=triton`, `a:b:c`, `;` as a separator).
    """
    out: dict[str, str] = {}
    for entry in value.split(","):
        entry = entry.strip()
        if not entry:
            continue
        op, sep, name = entry.rpartition(":")
        if not sep:
            op, name = "*", entry
        op, name = op.strip(), name.strip()
        if not op or not name or not (op == "*" or op.isidentifier()) or not name.isidentifier():
            raise ValueError(f"{ENV_VAR}: malformed entry {entry!r} (expected comma-separated op:backend, "
                             f"*:backend or backend)")
        out[op] = name
    return out


@functools.lru_cache(maxsize=1)
def default_registry() -> Registry:
    """The package's registry: built-in backends plus entry-point plug-ins, built on first use."""
    from deepinfer_kernels.backends import build_registry

    return build_registry()


def dispatch(op: str, key: torch.Tensor, backend: str | None, *args: Any, **kwargs: Any) -> Any:
    """Selects the implementation of `op` for a call whose device/dtype is that of `key`, runs it.

    Called by the public ops only; `args`/`kwargs` are the op's arguments without `backend`.
    """
    registry = default_registry()
    impl = registry.select(op, key.device, key.dtype, args, kwargs, backend)
    return registry.load(impl)(*args, **kwargs)
