"""FPDeep (Wang, Geng, Li, Jin, Herbordt): CNN training as one fine-grained pipeline on a chain of FPGAs.

Accelerators ``vc709`` (XC7VX690T, 150 Gb/s per FPGA: 75 Gb/s per link and direction) and
``vc709-250`` (250 Gb/s); cost model ``fpdeep`` (period, throughput, per-link traffic, BRAM);
engine ``fpdeep`` (the balanced chain partition).
"""

from optmap.hookspecs import hookimpl


@hookimpl
def optmap_register_accelerators(register):
    from optmap.plugins.fpdeep.hardware import PRESETS

    for name, fpga in PRESETS.items():
        register(name, fpga)


@hookimpl
def optmap_register_cost_models(register):
    register("fpdeep", "optmap.plugins.fpdeep.model:FPDeepCostModel")


@hookimpl
def optmap_register_search_engines(register):
    register("fpdeep", "optmap.plugins.fpdeep.engine:FPDeepSearch")
