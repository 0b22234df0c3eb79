"""Layer graphs built on first use.

A cost model that reads only a summary of the model (``megatron-3d`` reads a transformer's
:class:`~optmap.workload.transformer.TransformerConfig`) need not pay for its thousands of layers:
Llama 3.1 405B's graph has about 6,000, most of the time of loading its problem (issue 25).

:class:`DeferredGraph` holds a factory that returns a :class:`~optmap.workload.graph.Workload`,
built and checked as any other; its :attr:`~DeferredGraph.layers_by_name` and
:attr:`~DeferredGraph.producers` are mappings that call the factory once, on the first access of
either, and read the built workload's. A Workload given both checks its graph then, not at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from optmap.workload.graph import Workload


class DeferredGraph:
    """A layer graph that ``build`` makes on first use. ``build`` must pickle (a module-level
    function or a ``functools.partial`` of one) so that workloads travel to workers."""

    def __init__(self, build: Callable[[], Workload]) -> None:
        self.build = build
        self.layers_by_name = DeferredMapping(self, "layers_by_name")
        self.producers = DeferredMapping(self, "producers")

    @cached_property
    def built(self) -> Workload:
        """The workload ``build`` returns (its own checks run as it is made)."""
        return self.build()

    def owns(self, layers_by_name: Mapping, producers: Mapping) -> bool:
        """True when ``layers_by_name`` and ``producers`` are this graph's mappings."""
        return layers_by_name is self.layers_by_name and producers is self.producers


class DeferredMapping(Mapping):
    """One mapping (``layers_by_name`` or ``producers``) of a :class:`DeferredGraph`'s workload."""

    def __init__(self, graph: DeferredGraph, field: str) -> None:
        self.graph = graph
        self._field = field

    @property
    def _built(self) -> Mapping:
        return getattr(self.graph.built, self._field)

    def __getitem__(self, key: str) -> Any:
        return self._built[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._built)

    def __len__(self) -> int:
        return len(self._built)

    def __contains__(self, key: object) -> bool:
        return key in self._built

    def get(self, key: str, default: Any = None) -> Any:
        return self._built.get(key, default)

    def keys(self):
        return self._built.keys()

    def items(self):
        return self._built.items()

    def values(self):
        return self._built.values()

    def __repr__(self) -> str:
        built = "built" if "built" in self.graph.__dict__ else "not built yet"
        return f"<{self._field} of a deferred layer graph, {built}>"
