"""What a compiled kernel would give AccPar's batch scoring (issue 14, item 3): evidence for the
maintainer's decision the issue's note asks for. Not used by optmap; needs ``pip install numba``.

The kernel scores whole plans one row at a time, fused (no temporaries), for systems of 2^k
identical accelerators: one symmetric split per level, ``combine = "max"``, no link latency, the
model's default options. It repeats ``evaluate_batch``'s arithmetic operation for operation,
including numpy's pairwise order for row sums, and the script checks that every score is bit
for bit the same. It prints the kernel's rate beside ``evaluate_batch``'s, and what numba costs
a process: its import and the kernel's first-call compilation (uncached).

    python benchmarks/prototype_compiled_scoring.py [--rows 20000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import numpy as np
from timing import accpar_problem, machine, verdict

from optmap.plugins.accpar.tables import CROSS_TERMS, FULL_TERMS

try:
    import numba
except ImportError:
    raise SystemExit("error: this prototype needs numba (pip install numba); optmap itself does not")


@numba.njit
def pairwise_sum(a, n):
    """numpy's pairwise summation of a contiguous row (numpy/_core/src/umath/loops_utils.h.src)."""
    if n < 8:
        total = -0.0
        for i in range(n):
            total += a[i]
        return total
    if n <= 128:
        r0, r1, r2, r3, r4, r5, r6, r7 = a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
        i = 8
        while i < n - n % 8:  # eight running sums, as numpy unrolls them
            r0, r1, r2, r3 = r0 + a[i], r1 + a[i + 1], r2 + a[i + 2], r3 + a[i + 3]
            r4, r5, r6, r7 = r4 + a[i + 4], r5 + a[i + 5], r6 + a[i + 6], r7 + a[i + 7]
            i += 8
        total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        for k in range(i, n):
            total += a[k]
        return total
    half = n // 2
    half -= half % 8
    return pairwise_sum(a[:half], half) + pairwise_sum(a[half:], n - half)


@numba.njit
def score(states, root, constant, factor, s_in, kernel, edge_u, edge_v, code_base, seconds, fraction,
          bytes_per_element, weight_copies, out):
    """Per row: communicated elements and seconds summed over levels (levels.py `_level`, one
    symmetric side), then the leaf's memory (model.py `_leaf_costs`). ``out`` is (rows, 3)."""
    rows, levels, nodes = states.shape
    edges = edge_u.size
    dims = np.empty((3, nodes))
    node_elements, node_seconds = np.empty(nodes), np.empty(nodes)
    edge_elements, edge_seconds = np.empty(edges), np.empty(edges)
    received = np.empty(nodes)
    for r in range(rows):
        dims[:] = root
        elements = seconds_total = 0.0
        for h in range(levels):
            state = states[r, h]
            for i in range(nodes):
                s = state[i]
                batch, d_in, d_out = dims[0, i], dims[1, i], dims[2, i]
                product = d_in * d_out if s == 0 else (batch * d_out if s == 1 else batch * d_in)  # Table 4
                node_elements[i] = product * constant[s, i]
                node_seconds[i] = node_elements[i] * seconds[h]
                received[i] = batch * d_in * s_in[i]  # A(F) of the consumer
                for d in range(3):  # §3.2 SHRINK
                    dims[d, i] *= factor[h, d, s, i]
            for e in range(edges):
                v = edge_v[e]
                edge_elements[e] = received[v] * fraction[h, code_base[e] + 6 * state[edge_u[e]] + state[v]]  # Table 5
                edge_seconds[e] = edge_elements[e] * seconds[h]
            level_elements = pairwise_sum(node_elements, nodes) + pairwise_sum(edge_elements, edges)
            level_seconds = pairwise_sum(node_seconds, nodes) + pairwise_sum(edge_seconds, edges)
            elements = level_elements if h == 0 else elements + level_elements
            seconds_total = level_seconds if h == 0 else seconds_total + level_seconds
        for i in range(nodes):
            node_elements[i] = dims[1, i] * dims[2, i] * kernel[i]
            node_seconds[i] = dims[0, i] * dims[1, i] * s_in[i]
        weights, stored = pairwise_sum(node_elements, nodes), pairwise_sum(node_seconds, nodes)
        out[r, 0], out[r, 1] = elements, seconds_total
        out[r, 2] = max(0.0, bytes_per_element * (weight_copies * weights + stored))


def kernel_inputs(model) -> tuple:
    """The model's tables, per level, in the kernel's argument order (after ``states``)."""
    splits = [s for level in model.hierarchy.splits for s in level]
    if not all(s.symmetric for s in splits) or model.combine != "max" or model.step is not None or any(
            model.networks[(s.level, s.parent)].latency for s in splits):
        raise SystemExit("error: the prototype covers 2^k identical accelerators with the default options only")
    g = model.graph
    constant, splits_dim = model.state_tables
    fraction = np.stack([CROSS_TERMS * s.share * (1 - s.share) + FULL_TERMS * (1 - s.share) for s in splits])
    return (model.root.sizes[:, 0, :].copy(), constant.astype(float),
            np.stack([np.where(splits_dim, s.share, 1.0) for s in splits]), g.s_in.astype(float),
            g.kernel.astype(float), g.edge_u, g.edge_v, (18 * g.edge_role_u + 3 * g.edge_role_v).astype(np.int64),
            np.array([model.seconds[(s.level, s.parent)][0] for s in splits]), fraction,
            float(model.bytes), float(model.weight_copies))


def compiled_batch(model):
    """``evaluate_batch``'s communication and memory columns, through the kernel."""
    inputs = kernel_inputs(model)

    def evaluate(X):
        out = np.empty((len(X), 3))
        score(model._decode(X)[0], *inputs, out)
        return out
    return evaluate


def best_rate(function, X, repeats: int = 5) -> float:
    """Rows per CPU second, the best of ``repeats`` calls."""
    spent = []
    for _ in range(repeats):
        start = time.process_time()
        function(X)
        spent.append(time.process_time() - start)
    return len(X) / min(spent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    args = parser.parse_args()
    print(machine(), f"numba {numba.__version__}")
    child = subprocess.run([sys.executable, "-c", "import time; import numpy; t = time.process_time(); "
                            "import numba; print(time.process_time() - t)"], capture_output=True, text=True, check=True)
    print(f"import numba, after numpy: {float(child.stdout):.2f} s CPU (every process that scores in batches)")
    rng = np.random.default_rng(0)
    for label, network, count, target in [("vgg19, 8 tpu-v3", "vgg19", 8, 1e6),
                                          ("resnet50, 1024 tpu-v3", "resnet50", 1024, None)]:
        model = accpar_problem(network, [("tpu-v3", count)]).cost_model
        X = model.space.sample(rng, args.rows)
        evaluate = compiled_batch(model)
        start = time.process_time()
        out = evaluate(X[:10])
        first = time.process_time() - start
        reference = model.evaluate_batch(X)
        out = evaluate(X)
        same = all(np.array_equal(out[:, k], reference[key])
                   for k, key in enumerate(("comm_elements", "comm_time", "memory_bytes")))
        kernel, numpy_rate = best_rate(evaluate, X), best_rate(model.evaluate_batch, X)
        goal = f"; target >= {target:,.0f}: {verdict(kernel, target, False)}" if target else ""
        print(f"{label}: kernel {kernel:,.0f} rows per CPU second, evaluate_batch {numpy_rate:,.0f} "
              f"({kernel / numpy_rate:.1f}x){goal}; bit for bit the same: {same}; first call (compiling) {first:.1f} s")


if __name__ == "__main__":
    main()
