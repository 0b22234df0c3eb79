"""A plugin that implements a misspelt hook (``workload`` instead of ``workloads``)."""

from optmap.hookspecs import hookimpl


@hookimpl
def optmap_register_workload(register):
    register("nothing", lambda *, batch: None)
