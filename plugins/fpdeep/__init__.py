"""FPDeep (Wang, Geng, Li, Jin, Herbordt): CNN training as one fine-grained pipeline on a chain of FPGAs.

Accelerators ``vc709`` (XC7VX690T; options ``link_ports``, ``port_gbps``, ``clock_mhz``, ... — by
default 150 Gb/s per FPGA: 75 Gb/s per link and direction) and ``vc709-250`` (250 Gb/s); cost
model ``fpdeep`` (period, throughput, per-link traffic, BRAM); engine ``fpdeep`` (the balanced
chain partition).
"""

from optmap.hookspecs import hookimpl


@hookimpl
def optmap_register_accelerators(register):
    register("vc709", "optmap.plugins.fpdeep.hardware:vc709")  # a factory: link_ports, port_gbps, ... options
    register("vc709-250", "optmap.plugins.fpdeep.hardware:vc709_250")


@hookimpl
def optmap_register_cost_models(register):
    register("fpdeep", "optmap.plugins.fpdeep.model:FPDeepCostModel")


@hookimpl
def optmap_register_search_engines(register):
    register("fpdeep", "optmap.plugins.fpdeep.engine:FPDeepSearch")
