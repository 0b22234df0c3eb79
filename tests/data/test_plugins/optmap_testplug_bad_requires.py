"""A plugin that answers optmap_plugin_requires with one string instead of a list of names."""

from optmap.hookspecs import hookimpl


@hookimpl
def optmap_plugin_requires():
    return "transformer"


@hookimpl
def optmap_register_cost_models(register):
    register("bad-requires", "optmap_testplug_bad_requires:NeverBuilt")
