"""A plugin whose factories misbehave when used (registration itself is fine)."""

from optmap.hookspecs import hookimpl


def exploding(groups, *, bandwidth_gbps: float = 1.0):
    """A topology builder that raises an exception that is not an OptmapError."""
    raise ZeroDivisionError("float division by zero\nwith a second line")


def not_a_system(groups):
    """A topology builder that returns the wrong type."""
    return 42


@hookimpl
def optmap_register_topologies(register):
    register("exploding", exploding)
    register("not-a-system", not_a_system)


@hookimpl
def optmap_register_cost_models(register):
    register("ghost", "optmap_testplug_bad_factory_missing:GhostCostModel")
