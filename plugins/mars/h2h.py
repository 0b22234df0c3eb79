"""``h2h``: the H2H mapping (Zhang et al., DAC 2022) that MARS Table IV compares against, in MARS's formulation.

H2H maps every layer of a heterogeneous model onto one accelerator of a heterogeneous system of
fixed designs, without intra-layer parallelism: first a computation-prioritised assignment, then
a communication-aware re-mapping. Expressed in the ``mars`` formulation (so it is scored by the
same cost model as MARS; decision recorded here) that is:

1. **Computation-prioritised assignment.** Every device is its own AccSet (P = 1, no sharding).
   An exact DP over (devices used per design kind, layers placed) chooses the order of the
   devices and the contiguous layer run of each so that the summed computation time is least,
   communication ignored (on an adaptive system a device's design is the fastest on its run).
2. **Communication-aware re-mapping.** Steepest descent on the full latency (computation and
   every transfer, the cost model's own): move any boundary between two runs by one layer, or
   swap the devices (and designs) of any two runs; take the best improving move, repeat until
   none improves or ``max_sweeps`` sweeps.

Differences from H2H itself (MARS's formulation imposes them): each device runs one contiguous
run of the topological order, every device is used, and branches do not run concurrently (sets
run in turn). The Table IV numbers of H2H come from H2H's own simulator; ours are on our model.
"""

from __future__ import annotations

import itertools

import numpy as np

from optmap import schedule
from optmap.bounds import MAX_STEPS, ints
from optmap.errors import OptmapError
from optmap.search import Evaluator, SearchEngine

from .engines import mars_model
from .level1 import Plan
from .model import MARS_TABLES, MarsCostModel


def _singletons(model: MarsCostModel) -> list[int]:
    index = {c: i for i, c in enumerate(model.candidates)}
    missing = [d for d in range(model.system.count) if (d,) not in index]
    if missing:
        raise OptmapError("h2h maps layers onto single devices; set [cost] min_set_size = 1")
    return [index[(d,)] for d in range(model.system.count)]


def _compute_prefix(model: MarsCostModel, singles: list[int]):
    """Device kinds (device lists), prefix sums of compute per (kind, design option) with prefix
    counts of the layers the option cannot run, and the design options per kind."""
    n = len(model.layers)
    kinds: dict[str, list[int]] = {}
    for d in range(model.system.count):
        kinds.setdefault("adaptive" if model.adaptive else model.device_designs[d].name, []).append(d)
    options = [list(range(len(model.designs))) if model.adaptive else [-1] for _ in kinds]
    prefix = np.zeros((len(kinds), max(len(o) for o in options), n + 1))
    blocked = np.zeros_like(prefix)  # running count of layers a design cannot run
    for k, devices in enumerate(kinds.values()):
        for j, design in enumerate(options[k]):
            compute = model.subproblem(singles[devices[0]], design, 0, n - 1).table.compute[:, 0]
            prefix[k, j] = schedule.prefix_sums(np.where(np.isfinite(compute), compute, 0.0))
            blocked[k, j] = schedule.prefix_sums(~np.isfinite(compute))
        blocked[k, len(options[k]):] = 1.0
    return list(kinds.values()), (prefix, blocked), options


def computation_prioritised(model: MarsCostModel) -> Plan:
    """Step 1: contiguous runs on single devices minimising the summed computation (exact DP)."""
    singles = _singletons(model)
    kinds, (prefix, blocked), options = _compute_prefix(model, singles)
    n, counts = len(model.layers), [len(k) for k in kinds]
    need = min(sum(counts), n)
    states = [s for s in itertools.product(*(range(c + 1) for c in counts)) if sum(s) <= need]
    best = {(tuple(0 for _ in counts), 0): (0.0, None)}
    for state in sorted(states, key=sum):
        for i in range(n):
            entry = best.get((state, i))
            if entry is None:
                continue
            for k in range(len(counts)):
                if state[k] == counts[k]:
                    continue
                run = prefix[k, :, i + 1:] - prefix[k, :, i:i + 1]  # (options, ends j = i+1..n)
                run = np.where(blocked[k, :, i + 1:] > blocked[k, :, i:i + 1], np.inf, run)
                choice = run.argmin(0)
                cost = entry[0] + run.min(0)
                nxt = tuple(v + (a == k) for a, v in enumerate(state))
                last = sum(nxt) == need
                for j in ([n] if last else range(i + 1, n)):
                    value = cost[j - i - 1]
                    if value < best.get((nxt, j), (np.inf,))[0]:
                        best[(nxt, j)] = (value, (state, i, k, int(choice[j - i - 1])))
    ends = [key for key in best if sum(key[0]) == need and key[1] == n]
    if not ends:
        raise OptmapError(f"h2h: no assignment of the {n} layers to contiguous runs on all {need} devices can run "
                          "every layer (a device whose design runs none of them, e.g. winograd on 5x5 kernels); "
                          "drop that device or pick designs that run the layers")
    final = min(ends, key=lambda key: best[key][0])
    runs = []
    key = final
    while best[key][1] is not None:
        state, i, k, option = best[key][1]
        runs.append((k, option, i, key[1] - 1))
        key = (state, i)
    runs.reverse()
    used = [iter(devices) for devices in kinds]
    sets = tuple(singles[next(used[k])] for k, _, _, _ in runs)
    designs = tuple(options[k][o] for k, o, _, _ in runs)
    return Plan(sets, designs, tuple((a, b) for _, _, a, b in runs), (0,) * n)


def _moves(plan: Plan) -> list[Plan]:
    """Every plan one boundary shift or one swap of two runs' devices away."""
    out = []
    bounds = [list(b) for b in plan.bounds]
    for i in range(len(bounds) - 1):
        for delta in (-1, 1):
            moved = [list(b) for b in bounds]
            moved[i][1] += delta
            moved[i + 1][0] += delta
            if moved[i][1] >= moved[i][0] and moved[i + 1][1] >= moved[i + 1][0]:
                out.append(Plan(plan.sets, plan.designs, tuple(map(tuple, moved)), plan.strategies))
    for i, j in itertools.combinations(range(len(plan.sets)), 2):
        sets, designs = list(plan.sets), list(plan.designs)
        sets[i], sets[j] = sets[j], sets[i]
        designs[i], designs[j] = designs[j], designs[i]
        out.append(Plan(tuple(sets), tuple(designs), plan.bounds, plan.strategies))
    return out


class H2HSearch(SearchEngine):
    """H2H (DAC 2022): computation-prioritised layer assignment, then communication-aware re-mapping."""

    requires = frozenset({MARS_TABLES})
    accepts = (MarsCostModel,)

    def __init__(self, *, max_sweeps: ints(0, MAX_STEPS) = 200, remap: bool = True) -> None:
        """``max_sweeps`` steepest-descent sweeps of step 2; ``remap = false`` stops after step 1."""
        if max_sweeps < 0:
            raise OptmapError(f"max_sweeps must be >= 0, got {max_sweeps}")
        self.max_sweeps, self.remap = max_sweeps, remap

    def search(self, evaluator: Evaluator, seed: int) -> dict:
        model = mars_model(evaluator)
        plan = computation_prioritised(model)
        F, violation = evaluator.evaluate(model.plan_vector(plan)[None])
        best = F[0, 0] if violation[0] == 0 else np.inf
        step1, sweeps = best, 0
        while self.remap and sweeps < self.max_sweeps and not evaluator.exhausted:
            candidates = _moves(plan)
            F, violation = evaluator.evaluate(np.array([model.plan_vector(p) for p in candidates]))
            F = np.where(violation > 0, np.inf, F[:, 0])
            i = int(np.argmin(F))
            sweeps += 1
            if not F[i] < best:
                break
            plan, best = candidates[i], F[i]
        return {"step1_time": float(step1), "sweeps": sweeps}
