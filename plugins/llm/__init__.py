"""LLM training plans: Megatron-style tensor × pipeline × data parallelism on GPU clusters.

Topologies ``dgx-a100`` and ``dgx-h100`` (nodes of 8 GPUs, NVSwitch inside, one InfiniBand
adapter per GPU between nodes; :mod:`.cluster`, constants cited there); cost model
``megatron-3d`` (:mod:`.model`: iteration time with its parts and memory per GPU, Korthikanti
et al. 2022 activation formulas, :mod:`.timing`, :mod:`.memory`,
:mod:`.compute`); engine ``megatron-3d`` (:mod:`.engine`: every valid plan in one vectorised pass,
best plan and top alternatives). Problems in ``problems/llm/``; the shared ``transformer``
workload (GPT and Llama presets) describes the model.
"""

from optmap.hookspecs import hookimpl


@hookimpl
def optmap_plugin_requires():
    return ["transformer"]  # its cost model plans the ``transformer`` workload (a TransformerWorkload)


@hookimpl
def optmap_register_topologies(register):
    register("dgx-a100", "optmap.plugins.llm.cluster:dgx_a100")
    register("dgx-h100", "optmap.plugins.llm.cluster:dgx_h100")


@hookimpl
def optmap_register_cost_models(register):
    register("megatron-3d", "optmap.plugins.llm.model:Megatron3DCostModel")


@hookimpl
def optmap_register_search_engines(register):
    register("megatron-3d", "optmap.plugins.llm.engine:Megatron3DSearch")
