"""A plugin that gives a workload a search-engine default (only search engines declare one)."""

from optmap.hookspecs import hookimpl
from optmap.registry import DefaultFor


@hookimpl
def optmap_register_workloads(register):
    register("defaulted", "optmap_testplug_bad_default:nothing", default=DefaultFor())
