"""Composite formulations: a pipeline of stages whose inside any other registered formulation maps.

Cost model ``pipeline`` (:mod:`.model`): stage count, layer cuts, device split, micro-batches and
every decision of the inner formulation (``[cost.stage] model = "<name>"``), searched jointly by
any engine. Engine ``pipeline`` (:mod:`.engine`): Alpa's two-level search, a DP over cut points
and device splits with the inner formulation's own engine for each candidate stage.
"""

from optmap.hookspecs import hookimpl


@hookimpl
def optmap_register_cost_models(register):
    register("pipeline", "optmap.plugins.compose.model:PipelineCostModel")


@hookimpl
def optmap_register_search_engines(register):
    register("pipeline", "optmap.plugins.compose.engine:PipelineSearch")
