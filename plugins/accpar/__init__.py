"""AccPar (Song et al., HPCA 2020): heterogeneous tensor partitioning, with the DP, OWT and HyPar baselines.

Cost model ``accpar``; engines ``accpar`` (layer-wise DP with the heterogeneous share), ``hypar``,
``owt`` and ``dp``; workloads ``alexnet-original``, ``lenet-caffe`` and ``accpar-text`` (the authors' layer files).
"""

from optmap.hookspecs import hookimpl


@hookimpl
def optmap_register_workloads(register):
    register("alexnet-original", "optmap.plugins.accpar.networks:alexnet_original")
    register("lenet-caffe", "optmap.plugins.accpar.networks:lenet_caffe")
    register("accpar-text", "optmap.plugins.accpar.networks:accpar_text")


@hookimpl
def optmap_register_workload_readers(register):
    register(".txt", "accpar-text")  # the authors' layer files: [workload] file = "net.txt"


@hookimpl
def optmap_register_cost_models(register):
    register("accpar", "optmap.plugins.accpar.model:AccParCostModel")


@hookimpl
def optmap_register_search_engines(register):
    register("accpar", "optmap.plugins.accpar.engines:AccParSearch")
    register("hypar", "optmap.plugins.accpar.engines:HyParSearch")
    register("owt", "optmap.plugins.accpar.engines:OneWeirdTrick")
    register("dp", "optmap.plugins.accpar.engines:DataParallel")
