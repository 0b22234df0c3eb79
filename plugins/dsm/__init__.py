"""DeepSpatialMatrix (Venkataramani et al., IBM): peta-scale torus, bandwidth-centric cost model, pruned exploration.

Accelerator ``dsm-chip`` (Fig. 10 chip: cores, PE arrays, scratchpads, ring, HBM; :mod:`chip`);
topology ``dsm-torus`` (M x N torus with X/Y bandwidths, presets dsm-8pf-sym, dsm-8pf-asym,
dsm-128tf-1chip; :mod:`torus`); cost model ``dsm`` (per layer and pass: parallelism type, core
and PE-array splits, memory reuse, DySM, timestep pipelining, weight preloading; :mod:`model`);
engine ``dsm`` (pruned vectorised enumeration + chain DP; :mod:`engine`). Problems in
``problems/dsm/``, report in ``docs/reproductions/dsm.md``.
"""

from optmap.hookspecs import hookimpl


@hookimpl
def optmap_register_accelerators(register):
    register("dsm-chip", "optmap.plugins.dsm.chip:build_dsm_chip")  # a factory: every Fig. 10 chip option


@hookimpl
def optmap_register_topologies(register):
    register("dsm-torus", "optmap.plugins.dsm.torus:dsm_torus")


@hookimpl
def optmap_register_cost_models(register):
    register("dsm", "optmap.plugins.dsm.model:DSMCostModel")


@hookimpl
def optmap_register_search_engines(register):
    register("dsm", "optmap.plugins.dsm.engine:DSMSearch")
