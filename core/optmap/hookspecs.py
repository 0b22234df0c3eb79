"""The plugin contract: pluggy hook specifications, nothing else.

Every hook receives a ``register(name, factory)`` callable. A factory is called with the keys of
its problem-file section as keyword arguments; the host validates those keys against the
factory's annotated signature, so a plugin declares its options simply by its parameters.
``factory`` may also be an import path ``"package.module:attribute"`` that the host imports only
when the name is used, which keeps ``optmap plugins`` fast.
"""

import pluggy

hookspec = pluggy.HookspecMarker("optmap")
hookimpl = pluggy.HookimplMarker("optmap")


@hookspec
def optmap_register_workloads(register):
    """Register workload builders: ``register("vgg16", build_vgg16)``.

    A builder is called as ``build(batch=..., dtype=..., phase=..., **options)`` and returns an
    :class:`optmap.workload.Workload`.
    """


@hookspec
def optmap_register_accelerators(register):
    """Register accelerator presets: ``register("tpu-v3", Accelerator(...))``."""


@hookspec
def optmap_register_topologies(register):
    """Register topology builders: ``register("torus2d", build_torus2d)``.

    A builder is called as ``build(groups, **options)`` where ``groups`` is a list of
    :class:`optmap.system.GroupSpec` (accelerator and count), and returns an
    :class:`optmap.system.System`.
    """


@hookspec
def optmap_register_cost_models(register):
    """Register cost models (formulations): ``register("accpar", AccParCostModel)``.

    A cost model factory is called as ``factory(workload, system, **options)`` and returns an
    object following :class:`optmap.cost.CostModel`.
    """


@hookspec
def optmap_register_search_engines(register):
    """Register search engines: ``register("ga", GeneticSearch)``.

    An engine factory is called as ``factory(**options)`` and returns an object following
    :class:`optmap.search.SearchEngine`.
    """
