"""A plugin whose registration hook raises."""

from optmap.hookspecs import hookimpl


@hookimpl
def optmap_register_topologies(register):
    raise ValueError("cannot read topology catalogue")
