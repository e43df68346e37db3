"""The reference backend: every primitive by its NumPy twin, one op at a time or a whole
graph node by node (the interpreter). It is the correctness oracle of every other backend,
and runs lazy CPU graphs where no C compiler exists (or with ``BRAZE_BACKEND=reference``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from braze.backends.reference.interpreter import ReferenceExecutable, evaluate
from braze.backends.reference.twins import apply_primitive
from braze.ir.graph import Graph
from braze.ir.primitive import PRIMITIVES, Aval, Category, Primitive
from braze.ir.prims.loops import install_evaluator
from braze.runtime.backend import Backend, register_backend

__all__ = ["REFERENCE", "ReferenceBackend", "ReferenceExecutable", "apply_primitive", "evaluate"]


class ReferenceBackend(Backend):
    name = "reference"
    kinds = ("CPU",)

    @property
    def lowerings(self) -> Mapping[Primitive, Any]:
        """A primitive's declaration is its lowering here: its NumPy twin (the interpreter
        walks the computations of fusions itself)."""
        return {p: p.impl for p in PRIMITIVES.values() if p.category is not Category.FUSION}

    def register_lowering(self, primitive: Primitive, rule: Any) -> None:
        raise ValueError(f"the reference backend runs {primitive.name} by its NumPy twin: it takes no lowering")

    def lower(self, optimized: Graph) -> ReferenceExecutable:
        return ReferenceExecutable(optimized)

    def apply(self, primitive: Primitive, values: list, attrs: dict, aval: Aval) -> Any:
        return apply_primitive(primitive, values, attrs, aval)


REFERENCE = register_backend(ReferenceBackend())
install_evaluator(evaluate)  # loops' NumPy twins run their bodies with the interpreter
