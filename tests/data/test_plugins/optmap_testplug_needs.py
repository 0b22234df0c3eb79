"""A plugin that needs the built-in ``transformer`` plugin (it declares it) and registers a cost model."""

from optmap.hookspecs import hookimpl


@hookimpl
def optmap_plugin_requires():
    return ["transformer"]


@hookimpl
def optmap_register_cost_models(register):
    register("needs-transformer", "optmap_testplug_needs:NeverBuilt")
