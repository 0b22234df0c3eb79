"""MARS (Shen et al., DAC 2023): adaptive multi-FPGA systems, accelerator selection and sharding.

Registers
    accelerators  ``superlip``, ``systolic``, ``winograd`` (Table II designs, each carrying its cycle
                  model) and ``f1-fpga`` (an unconfigured F1 FPGA, 1 GB DRAM);
    topologies    ``f1-16xlarge`` (8 FPGAs, groups of 4, 8 Gb/s inside, 2 Gb/s to the host) and
                  ``h2h-cluster`` (H2H's system: every pair at one bandwidth level);
    workloads     ``casia-surf``, ``facebagnet`` (multi-modal DAGs of the H2H comparison);
    cost model    ``mars``;
    engines       ``mars`` (two-level GA on pymoo), ``mars-baseline`` (Sec. VI-A), ``h2h`` (DAC 2022).

Decision: designs enter the plugin contract as accelerator presets that carry their cycle model
(:mod:`.designs`), registered through ``optmap_register_accelerators``; no new hook. Why: a design
is a configuration of an accelerator, and the same object must serve both as a fixed device of
the H2H cluster (a ``[[system.groups]]`` accelerator) and as a candidate of an adaptive system
(``[cost] designs = [...]``); an accelerator preset already has a name, a registry, one-line
errors and ``optmap plugins`` listing. The ``mars`` cost model finds every registered design
through the host (:func:`.designs.registered_designs`), so a third-party plugin adds a design by
registering an accelerator that carries a :class:`.designs.Design`.
"""

from optmap.hookspecs import hookimpl


@hookimpl
def optmap_register_accelerators(register):
    # factories, by import path (listing plugins imports nothing): [[system.groups]] keys such as
    # tm = 32 or memory_gib = 2 are their options
    for name in ("superlip", "systolic", "winograd"):
        register(name, f"optmap.plugins.mars.designs:{name}")
    register("f1-fpga", "optmap.plugins.mars.designs:f1_fpga")


@hookimpl
def optmap_register_topologies(register):
    register("f1-16xlarge", "optmap.plugins.mars.topology:f1_16xlarge")
    register("h2h-cluster", "optmap.plugins.mars.topology:h2h_cluster")


@hookimpl
def optmap_register_workloads(register):
    register("casia-surf", "optmap.plugins.mars.workloads:casia_surf")
    register("facebagnet", "optmap.plugins.mars.workloads:facebagnet")


@hookimpl
def optmap_register_cost_models(register):
    register("mars", "optmap.plugins.mars.model:MarsCostModel")


@hookimpl
def optmap_register_search_engines(register):
    register("mars", "optmap.plugins.mars.engines:MarsSearch")
    register("mars-baseline", "optmap.plugins.mars.engines:MarsBaseline")
    register("h2h", "optmap.plugins.mars.h2h:H2HSearch")
