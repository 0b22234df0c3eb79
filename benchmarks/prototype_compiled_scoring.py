"""What a compiled kernel would give AccPar's batch scoring (issue 14, item 3): evidence for the
maintainer's decision the issue's note asks for. Not used by optmap; needs ``pip install numba``.

The kernel scores whole plans for systems of 2^k identical accelerators (one symmetric split per
level, ``combine = "max"``, no link latency, the model's default options), fused: one pass per
level over (node, row), rows innermost so that LLVM vectorises across plans, every per-state
choice a select rather than a gather. It repeats ``evaluate_batch``'s arithmetic operation for
operation, numpy's pairwise order of row sums included, and the script checks that every score
is bit for bit the same. It prints the kernel's rate beside ``evaluate_batch``'s, and what numba
costs a process: its import, the first call's compilation, and loading the compiled kernel
from numba's cache in a later process.

    python benchmarks/prototype_compiled_scoring.py [--rows 20000] [--chunk 512]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from timing import accpar_problem, machine, verdict

from optmap.plugins.accpar.tables import CROSS_TERMS, FULL_TERMS

try:
    import numba
except ImportError:
    raise SystemExit("error: this prototype needs numba (pip install numba); optmap itself does not")


@numba.njit(cache=True)
def column_sums(a, out, partial):
    """out[r] = a[:, r].sum() in numpy's pairwise order (numpy/_core/src/umath/loops_utils.h.src:
    eight running sums from 8 terms up; rows of at most 128 terms, which the cases here have)."""
    n, rows = a.shape
    if n < 8:
        out[:] = -0.0
        for i in range(n):
            for r in range(rows):
                out[r] += a[i, r]
        return
    partial[:] = a[:8]
    i = 8
    while i < n - n % 8:
        for j in range(8):
            for r in range(rows):
                partial[j, r] += a[i + j, r]
        i += 8
    for r in range(rows):
        p = partial[:, r]
        out[r] = ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]))
    for k in range(i, n):
        for r in range(rows):
            out[r] += a[k, r]


@numba.njit(cache=True)
def score(states, root, constant, factor, s_in, kernel, edge_u, edge_v, code_base, seconds, fraction,
          bytes_per_element, weight_copies, out):
    """``states`` (levels, nodes, rows); ``out`` (rows, 3): communicated elements and seconds
    summed over levels (levels.py `_level`, one symmetric side), and the leaf's memory
    (model.py `_leaf_costs`)."""
    levels, nodes, rows = states.shape
    edges = edge_u.size
    batch, d_in, d_out = root[0].repeat(rows).reshape(nodes, rows), root[1].repeat(rows).reshape(nodes, rows), \
        root[2].repeat(rows).reshape(nodes, rows)
    node_elements, node_seconds, received = np.empty((nodes, rows)), np.empty((nodes, rows)), np.empty((nodes, rows))
    edge_elements, edge_seconds = np.empty((edges, rows)), np.empty((edges, rows))
    partial, sum_a, sum_b = np.empty((8, rows)), np.empty(rows), np.empty(rows)
    for h in range(levels):
        state, sec = states[h], seconds[h]
        for i in range(nodes):
            c0, c1, c2 = constant[0, i], constant[1, i], constant[2, i]
            fb, fi, fo = factor[h, 0, :, i], factor[h, 1, :, i], factor[h, 2, :, i]
            for r in range(rows):
                s = state[i, r]
                b, di, do = batch[i, r], d_in[i, r], d_out[i, r]
                product = di * do if s == 0 else (b * do if s == 1 else b * di)  # Table 4
                elements = product * (c0 if s == 0 else (c1 if s == 1 else c2))
                node_elements[i, r], node_seconds[i, r] = elements, elements * sec
                received[i, r] = b * di * s_in[i]  # A(F) of the consumer
                batch[i, r] = b * (fb[0] if s == 0 else (fb[1] if s == 1 else fb[2]))  # §3.2 SHRINK
                d_in[i, r] = di * (fi[0] if s == 0 else (fi[1] if s == 1 else fi[2]))
                d_out[i, r] = do * (fo[0] if s == 0 else (fo[1] if s == 1 else fo[2]))
        for e in range(edges):
            u, v, base, table = edge_u[e], edge_v[e], code_base[e], fraction[h]
            for r in range(rows):
                elements = received[v, r] * table[base + 6 * state[u, r] + state[v, r]]  # Table 5
                edge_elements[e, r], edge_seconds[e, r] = elements, elements * sec
        for column, (on_nodes, on_edges) in enumerate(((node_elements, edge_elements), (node_seconds, edge_seconds))):
            column_sums(on_nodes, sum_a, partial)
            column_sums(on_edges, sum_b, partial)
            for r in range(rows):
                out[r, column] = sum_a[r] + sum_b[r] if h == 0 else out[r, column] + (sum_a[r] + sum_b[r])
    for i in range(nodes):
        for r in range(rows):
            node_elements[i, r] = d_in[i, r] * d_out[i, r] * kernel[i]
            node_seconds[i, r] = batch[i, r] * d_in[i, r] * s_in[i]
    column_sums(node_elements, sum_a, partial)
    column_sums(node_seconds, sum_b, partial)
    for r in range(rows):
        out[r, 2] = max(0.0, bytes_per_element * (weight_copies * sum_a[r] + sum_b[r]))


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


def compiled_batch(model, chunk: int):
    """``evaluate_batch``'s comm_elements, comm_time and memory_bytes columns, through the kernel."""
    inputs = kernel_inputs(model)

    def evaluate(X):
        states, out = model._decode(X)[0], np.empty((len(X), 3))
        for start in range(0, len(X), chunk):
            score(np.ascontiguousarray(states[start:start + chunk].transpose(1, 2, 0)), *inputs,
                  out[start:start + chunk])
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


def first_call() -> None:
    """(Child process) CPU seconds of the kernel's first call (numba is imported already)."""
    model = accpar_problem("vgg19", [("tpu-v3", 8)]).cost_model
    X = model.space.sample(np.random.default_rng(0), 8)
    start = time.process_time()
    compiled_batch(model, 8)(X)
    print(time.process_time() - start)


def child_seconds(args: list[str], cache: str) -> float:
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True, check=True,
                         env={**os.environ, "NUMBA_CACHE_DIR": cache}, cwd=os.path.dirname(__file__))
    return float(out.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--chunk", type=int, default=512, help="plans per kernel call")
    parser.add_argument("--first-call", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_call:
        return first_call()
    print(machine(), f"numba {numba.__version__}")
    with tempfile.TemporaryDirectory() as cache:
        numba_import = child_seconds(["-c", "import time, numpy; t = time.process_time(); import numba; "
                                      "print(time.process_time() - t)"], cache)
        compiling = child_seconds([__file__, "--first-call"], cache)
        cached = child_seconds([__file__, "--first-call"], cache)
    print(f"a process that scores through numba pays: import numba {numba_import:.2f} s CPU, then its first "
          f"call {compiling:.2f} s (compiling; once per install) or {cached:.2f} s (loading numba's cache)")
    rng = np.random.default_rng(0)
    for label, network, count, target in [("vgg19, 8 tpu-v3", "vgg19", 8, 1e6),
                                          ("resnet50, 1024 tpu-v3", "resnet50", 1024, None)]:
        model = accpar_problem(network, [("tpu-v3", count)]).cost_model
        X = model.space.sample(rng, args.rows)
        evaluate = compiled_batch(model, args.chunk)
        reference, out = model.evaluate_batch(X), evaluate(X)
        same = all(np.array_equal(out[:, k], reference[key])
                   for k, key in enumerate(("comm_elements", "comm_time", "memory_bytes")))
        kernel, numpy_rate = best_rate(evaluate, X), best_rate(model.evaluate_batch, X)
        goal = f"; target >= {target:,.0f}: {verdict(kernel, target, False)}" if target else ""
        print(f"{label}: kernel {kernel:,.0f} plans per CPU second, evaluate_batch {numpy_rate:,.0f} "
              f"({kernel / numpy_rate:.1f}x){goal}; bit for bit the same: {same}")


if __name__ == "__main__":
    main()
