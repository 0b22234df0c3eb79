"""AccTFM (Zeng et al., IEEE TPDS 2022): fine-grained pipelining and hybrid compression for Megatron tensor parallelism.

Plans the shared ``transformer`` workload (:mod:`optmap.plugins.transformer`: presets TF8–TF64,
BERT, GPT-2, or explicit sizes). Cost model ``acctfm`` (per-block micro-batch counts per
direction, optional token top-k + piecewise quantisation, over Megatron tensor parallelism with
the System's All-Reduce); engines ``acctfm`` (Algorithm 1, faithful or exact) and ``megatron``
(the baseline plan). Numerical core: ``tensor_parallel`` (per-micro-batch cost tables),
``schedule``, ``compression``, ``measured`` (block shards priced by the shared
``optmap.compute`` on a calibrated accelerator); problems in ``problems/acctfm/``.
"""

from optmap.hookspecs import hookimpl


@hookimpl
def optmap_plugin_requires():
    return ["transformer"]  # its cost model plans the ``transformer`` workload (a TransformerWorkload)


@hookimpl
def optmap_register_cost_models(register):
    register("acctfm", "optmap.plugins.acctfm.model:AccTFMCostModel")


@hookimpl
def optmap_register_search_engines(register):
    register("acctfm", "optmap.plugins.acctfm.engines:AccTFMSearch")
    register("megatron", "optmap.plugins.acctfm.engines:MegatronPlan")
