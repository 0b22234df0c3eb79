"""The fast AccPar paths give the numbers of the slow ones (issue 14): the batched layer DP against
the generic chain DP run share by share, and every plan, DP cost and batch score against the
values the plugin printed before the speed work (tests/data/accpar_speed)."""

import json

import numpy as np
import pytest

import optmap.plugins.accpar.model as accpar_model
from optmap import chain_dp
from optmap.plugins.accpar.dp import NUMPY_CHAIN_ROWS, ChainDP
from optmap.plugins.accpar.engines import batch_level_plans, level_plans
from optmap.plugins.accpar.graph import Graph
from optmap.run import solve

from conftest import DATA, make_problem

BEFORE = json.loads((DATA / "accpar_speed" / "before-issue14.json").read_text())


def _reference_plans(model, shares):
    """The DP as it was: the tables of each level recomputed from the root (chain_tables), the
    block view solved by the generic optmap.chain_dp, one share setting at a time."""
    g = model.graph
    segments = [chain_dp.Segment(paths) for paths in g.segments]
    states = np.zeros((model.hierarchy.depth, len(g.names)), int)
    costs = []
    for level in range(model.hierarchy.depth):
        node, edge = model.chain_tables(level, states[:level], shares)
        edge_cost = {(int(u), int(v)): edge[e] for e, (u, v) in enumerate(zip(g.edge_u, g.edge_v))}
        cost, chosen = chain_dp.solve(list(g.chain), segments, dict(enumerate(node)), edge_cost)
        states[level] = [chosen[i] for i in range(len(g.names))]
        costs.append(cost)
    return states, costs


def _hetero(network, *groups, **cost):
    return make_problem({
        "workload": {"model": network, "batch": 128, "dtype": "bf16"},
        "system": {"topology": "hierarchical", "latency_us": 0.0,
                   "groups": [{"accelerator": a, "count": n} for a, n in groups]},
        "cost": {"model": "accpar", **cost},
    }).cost_model


@pytest.mark.parametrize("network", ["lenet-caffe", "alexnet-original", "vgg11", "resnet18", "resnet50"])
def test_batched_dp_equals_the_chain_dp_share_by_share(network):
    model = _hetero(network, ("tpu-v2", 4), ("tpu-v3", 4))
    (split,) = model.hierarchy.ratios
    grid = np.array([0.05, 0.3, 1 / 3, 0.5, 0.85])
    states, costs = batch_level_plans(model, {split.ratio: grid})
    for row, share in enumerate(grid):
        expected_states, expected_costs = _reference_plans(model, {split.ratio: float(share)})
        assert np.array_equal(states[row], expected_states)
        assert costs[row].tolist() == expected_costs  # bit for bit: the same additions in the same order


def test_batched_dp_breaks_ties_like_the_chain_dp():
    # Integer costs in {0, 1} make most choices ties; the generic DP's argmin keeps the lowest state.
    model = _hetero("resnet18", ("tpu-v3", 2))
    g: Graph = model.graph
    rng = np.random.default_rng(3)
    node = rng.integers(0, 2, (6, len(g.names), 3)).astype(float)
    edge = rng.integers(0, 2, (6, len(g.edge_u), 3, 3)).astype(float)
    node[:, 5, 1] = np.inf  # a forbidden state
    costs, states = ChainDP(g).solve(node, edge)
    segments = [chain_dp.Segment(paths) for paths in g.segments]
    for row in range(6):
        edge_cost = {(int(u), int(v)): edge[row, e] for e, (u, v) in enumerate(zip(g.edge_u, g.edge_v))}
        cost, chosen = chain_dp.solve(list(g.chain), segments, dict(enumerate(node[row])), edge_cost)
        assert costs[row] == cost
        assert states[row].tolist() == [chosen[i] for i in range(len(g.names))]


def _block_graph(segments):
    """A Graph with only what the DP reads: chain nodes 0, 1, ... joined by ``segments`` (paths of
    inner nodes numbered after the chain), the edges in path order."""
    chain = list(range(len(segments) + 1))
    names, edges = len(chain), []
    numbered = []
    for k, paths in enumerate(segments):
        block = []
        for length in paths:
            path = tuple(range(names, names + length))
            names += length
            hops = (k, *path, k + 1)
            edges.extend(zip(hops[:-1], hops[1:]))
            block.append(path)
        numbered.append(tuple(block))
    nothing = np.zeros(names)
    return Graph(names=tuple(map(str, range(names))), role=nothing, kind=("add",) * names, d_in=nothing,
                 d_out=nothing, kernel=nothing, s_in=nothing, s_out=nothing, flops_2mac=nothing,
                 edge_u=np.array([u for u, _ in edges]), edge_v=np.array([v for _, v in edges]),
                 edge_role_u=np.zeros(len(edges)), edge_role_v=np.zeros(len(edges)),
                 chain=tuple(chain), segments=tuple(numbered))


@pytest.mark.parametrize("rows", [1, 3, NUMPY_CHAIN_ROWS, NUMPY_CHAIN_ROWS + 5])
def test_padded_paths_and_both_chain_loops_equal_the_chain_dp(rows):
    # Blocks of one to three paths of zero to three inner nodes: the padding to one path length
    # and one width; below NUMPY_CHAIN_ROWS rows the chain runs over Python floats, from it in numpy.
    g = _block_graph([(0,), (3, 0), (1, 2, 0), (2,), (0, 0), (3, 1, 2), (0,)])
    rng = np.random.default_rng(rows)
    node = rng.integers(0, 2, (rows, len(g.names), 3)).astype(float)
    edge = rng.integers(0, 2, (rows, len(g.edge_u), 3, 3)).astype(float)
    node[:, 4, 0] = node[:, 2, 1:] = node[:, 9, 2] = edge[:, 7, 0] = np.inf  # forbidden states
    costs, states = ChainDP(g).solve(node, edge)
    segments = [chain_dp.Segment(paths) for paths in g.segments]
    for row in range(rows):
        edge_cost = {(int(u), int(v)): edge[row, e] for e, (u, v) in enumerate(zip(g.edge_u, g.edge_v))}
        cost, chosen = chain_dp.solve(list(g.chain), segments, dict(enumerate(node[row])), edge_cost)
        assert costs[row] == cost
        assert states[row].tolist() == [chosen[i] for i in range(len(g.names))]


def test_one_row_of_tables_serves_every_row():
    # One row of node costs for many rows of edge costs (the numpy chain), each row as if solved
    # alone (the Python chain).
    model = _hetero("resnet18", ("tpu-v3", 2))
    g: Graph = model.graph
    rng = np.random.default_rng(5)
    node = rng.integers(0, 3, (1, len(g.names), 3)).astype(float)
    edge = rng.integers(0, 3, (NUMPY_CHAIN_ROWS + 1, len(g.edge_u), 3, 3)).astype(float)
    costs, states = ChainDP(g).solve(node, edge)
    for row in range(len(edge)):
        alone = ChainDP(g).solve(node, edge[row:row + 1])
        assert costs[row] == alone[0][0] and states[row].tolist() == alone[1][0].tolist()


@pytest.mark.parametrize("case", BEFORE, ids=lambda c: f"{c['spec']['workload']['model']}-{len(c['spec']['system']['groups'])}kinds")
def test_plans_costs_and_scores_equal_the_code_before_issue_14(case, monkeypatch):
    problem = make_problem(json.loads(json.dumps(case["spec"])))
    model = problem.cost_model
    for engine, before in case["engines"].items():
        result = solve(problem, engine=engine)
        assert result.values == before["values"], engine
        assert result.best.array.astype(int).tolist() == before["mapping"], engine
        assert result.extra.get("dp_level_costs") == before["dp_level_costs"], engine
    states, costs = level_plans(model, case["level_plans"]["shares"])
    assert states.tolist() == case["level_plans"]["states"]
    assert costs == case["level_plans"]["costs"]
    for kernel_rows in (10**9, 1):  # numpy, then the compiled kernel
        monkeypatch.setattr(accpar_model, "KERNEL_ROWS", kernel_rows)
        scores = model.evaluate_batch(np.array(case["X"], float))
        for metric, values in case["scores"].items():
            assert np.asarray(scores[metric]).tolist() == values, (metric, kernel_rows)


def test_rows_per_scoring_pass_follow_the_network_size():
    # CHUNK_ELEMENTS = 2^16 elements per (rows, nodes + edges) array: VGG-19 (19 nodes, 18 edges)
    # gets 2^16 // 37 = 1771 rows, ResNet-50's block view (70 nodes, 85 edges) 2^16 // 155 = 422.
    vgg = _hetero("vgg19", ("tpu-v3", 8))
    assert (len(vgg.graph.names), len(vgg.graph.edge_u)) == (19, 18) and vgg.chunk_rows == 1771
    resnet = _hetero("resnet50", ("tpu-v3", 8))
    assert (len(resnet.graph.names), len(resnet.graph.edge_u)) == (70, 85) and resnet.chunk_rows == 422
    X = resnet.space.sample(np.random.default_rng(0), 900)  # three passes, the last one short
    assert np.array_equal(resnet.evaluate_batch(X)["time"], resnet.evaluate_batch(X, chunk=900)["time"])


def test_named_plans_are_the_baselines_and_the_dps():
    model = _hetero("resnet18", ("tpu-v2", 4), ("tpu-v3", 4))
    plans = model.plans()
    assert set(plans) == {"data-parallel", "one-weird-trick", "layer-dp", "hypar-dp"}
    layers = {name: kind for name, kind in zip(model.graph.names, model.graph.kind)}
    for (level, layer), value in ((tuple(k.split(":")), v) for k, v in plans["data-parallel"].as_dict().items()
                                  if k.startswith("L")):
        assert value == ("I" if layers[layer] != "add" else "batch")  # Type-I everywhere, adds batch-split
    for key, value in plans["one-weird-trick"].as_dict().items():
        if key.startswith("L") and layers[key.split(":")[1]] == "linear":
            assert value == "II"  # Krizhevsky: FC layers model-parallel
    equal = {s.ratio: 0.5 for s in model.hierarchy.ratios}
    assert np.array_equal(plans["layer-dp"].array, model.plan_vector(level_plans(model, equal)[0], equal))
