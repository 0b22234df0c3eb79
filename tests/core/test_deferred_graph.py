"""Deferred layer graphs (:class:`optmap.workload.graph.DeferredGraph`): built once, on first use, checked then."""

import pickle
from functools import partial

import pytest

from optmap.errors import OptmapError
from optmap.workload import DeferredGraph, Workload, WorkloadBuilder
from optmap.workload.layer import Layer

CALLS = []


def mlp(width: int) -> Workload:
    """A three-layer chain: input (8,) -> linear -> relu -> linear (a module-level factory, so it pickles)."""
    CALLS.append(width)
    b = WorkloadBuilder("mlp", (8,))
    b.linear(b.activation(b.linear("input", width, name="fc1"), "relu", name="act"), 4, name="fc2")
    return b.build(2)


def cyclic() -> Workload:
    """Two layers feeding each other: bypasses the builder, so only the Workload's check catches it."""
    a, b = Layer("a", "activation", ((4,),), (4,), {"kind": "relu"}), Layer("b", "activation", ((4,),), (4,), {"kind": "relu"})
    return Workload("loop", {"a": a, "b": b}, {"a": ("b",), "b": ("a",)}, 1)


def deferred(build) -> Workload:
    graph = DeferredGraph(build)
    return Workload("deferred", graph.layers_by_name, graph.producers, 2)


def test_built_once_on_first_access_and_equal_to_the_eager_graph():
    CALLS.clear()
    w = deferred(partial(mlp, 16))
    assert CALLS == []  # making the workload builds nothing
    eager = mlp(16)
    # the eager graph, written out by hand: input -> fc1 -> act -> fc2
    assert w.order == eager.order == ("input", "fc1", "act", "fc2")
    assert dict(w.producers) == dict(eager.producers) == {"fc1": ("input",), "act": ("fc1",), "fc2": ("act",)}
    assert [layer.name for layer in w.layers()] == list(eager.layers_by_name)
    assert w.params == eager.params == 8 * 16 + 16 + 16 * 4 + 4  # two linears with biases
    assert set(w.graph.edges) == {("input", "fc1"), ("fc1", "act"), ("act", "fc2")}
    assert "fc1" in w.layers_by_name and w.layers_by_name.get("nope") is None and len(w.producers) == 3
    assert CALLS == [16, 16]  # one build for the deferred workload (however often it is read), one eager


def test_checks_run_when_built():
    w = deferred(cyclic)  # accepted: nothing is built yet
    with pytest.raises(OptmapError, match="workload 'loop': the layer graph has a cycle"):
        w.layers()


def test_deferred_workload_pickles_before_and_after_build():
    w = deferred(partial(mlp, 4))
    again = pickle.loads(pickle.dumps(w))
    assert again.order == ("input", "fc1", "act", "fc2")
    built = pickle.loads(pickle.dumps(again))
    assert built.layer("fc2").params == 4 * 4 + 4
