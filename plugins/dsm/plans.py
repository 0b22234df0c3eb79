"""Other papers' parallelism patterns as DSM plans (note §8.2), scored by the DSM model.

DSM's chip-level types map onto AccPar's partition types: Data = Type-I (the batch is split),
Model = Type-III (output features are split). AccPar's Type-II splits the input features, so
every chip holds partial sums of the whole output that must be reduced across chips; DSM excludes
it (§II-C: "it is non-optimal to split along dimensions unrelated to Output ... leading to
additional data-transfers"), and so does this model: a Type-II layer is **rejected** with that
reason rather than priced. HyPar's per-layer choice is data or model; OWT (Krizhevsky's "one
weird trick") is data for convolutions and model for fully connected layers.

A pattern fixes only the types; the DSM engine fills in everything else (splits, tiles, reuse,
DySM) for those types, so a pattern is compared at its best.
"""

from __future__ import annotations

from optmap.errors import OptmapError
from optmap.space import Mapping

from .chipcomm import PTYPES
from .planner import plan_vector

ALIASES = {"I": "Data", "type-i": "Data", "data": "Data", "III": "Model", "type-iii": "Model", "model": "Model",
           **{p.lower(): p for p in PTYPES}}
TYPE_II = ("II", "type-ii")


def parallelism(name: str, layer: str) -> str:
    """A DSM type from a DSM, AccPar (I, III) or HyPar (data, model) name; Type-II is rejected."""
    key = str(name).strip()
    if key in TYPE_II or key.lower() in TYPE_II:
        raise OptmapError(f"layer '{layer}': AccPar Type-II splits the input features across chips, which leaves "
                          f"partial sums to reduce between chips; DSM excludes it (§II-C). Use Type-I (Data) or "
                          f"Type-III (Model)")
    if key in ALIASES or key.lower() in ALIASES:
        return ALIASES.get(key) or ALIASES[key.lower()]
    raise OptmapError(f"layer '{layer}': unknown parallelism '{name}'; use one of {', '.join(PTYPES)} or AccPar's I/III")


def pinned_types(model, pin: dict[str, str]) -> dict[str, str]:
    """``{layer: DSM type}`` checked against the model's layers and allowed types."""
    out = {}
    for layer, name in pin.items():
        if layer not in model.vars:
            raise OptmapError(f"pin: the workload has no layer '{layer}' that DSM maps; layers: "
                              f"{', '.join(list(model.vars)[:6])}...")
        ptype = parallelism(name, layer)
        if ptype not in model.ptypes:
            raise OptmapError(f"pin: layer '{layer}' cannot be {ptype} here (types allowed: {', '.join(model.ptypes)}; "
                              f"hybrid types need [cost] hybrid = true and more than one chip)")
        out[layer] = ptype
    return out


def patterns(model) -> dict[str, dict[str, str]]:
    """Data parallel, model parallel and OWT as layer -> type maps (only those the model allows)."""
    layers = model.graph.layers
    out = {"data-parallel": {layer.name: "Data" for layer in layers}}
    if "Model" in model.ptypes:
        out["model-parallel"] = {layer.name: "Model" for layer in layers}
        out["owt"] = {layer.name: "Data" if layer.kind == "conv" else "Model" for layer in layers}
    return out


def named_plans(model) -> dict[str, Mapping]:
    """Each pattern completed by the DSM planner's tables (paper pruning)."""
    return {name: model.space.decode(plan_vector(model, pinned_types(model, types)))
            for name, types in patterns(model).items()}
