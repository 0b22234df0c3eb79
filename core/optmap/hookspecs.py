"""The plugin contract: pluggy hook specifications, nothing else.

Every hook receives a ``register(name, factory)`` callable. A factory is called with the keys of
its problem-file section as keyword arguments; the host validates those keys against the
factory's annotated signature, so a plugin declares its options simply by its parameters.
``factory`` may also be an import path ``"package.module:attribute"`` that the host imports only
when the name is used, which keeps ``optmap plugins`` fast.

What each kind of factory must return is a small contract checked once, when it is built
(:mod:`optmap.problem.common` and :mod:`optmap.run`): a :class:`~optmap.workload.Workload`, an
:class:`~optmap.system.Accelerator`, a :class:`~optmap.system.System`, a
:class:`~optmap.cost.CostModel` (:func:`optmap.cost.missing`), a
:class:`~optmap.search.SearchEngine` (:func:`optmap.search.engine.missing`).

A factory that declares a keyword-only parameter ``host`` receives the :class:`optmap.host.Host`
building it (never a problem-file key): that is how one plugin uses another, by registered name
(``host.build("workload", "transformer", options={...})``), never by importing it. A plugin that
needs another one says so with :func:`optmap_plugin_requires`.
"""

import pluggy

hookspec = pluggy.HookspecMarker("optmap")
hookimpl = pluggy.HookimplMarker("optmap")


@hookspec
def optmap_plugin_requires():
    """The names of the plugins this plugin needs (entry-point names): ``return ["transformer"]``.

    Called once per plugin when the host loads, before its registration hooks. A plugin whose
    required plugin is disabled (``-p no:NAME``, ``OPTMAP_DISABLE_PLUGINS``), failed to load, is
    not installed or is itself left out is left out with everything it registers, and the reason
    names both plugins; asking for one of its names (a problem's ``[cost] model``, ...) is refused
    in one line with that reason (:attr:`optmap.host.Host.withheld`). Declare a plugin you use by
    registered name through the host; importing another plugin's modules is not allowed.
    """


@hookspec
def optmap_register_workloads(register):
    """Register workload builders: ``register("vgg16", build_vgg16)``.

    A builder is called as ``build(batch=..., dtype=..., phase=..., **options)`` and returns an
    :class:`optmap.workload.Workload`.
    """


@hookspec
def optmap_register_workload_readers(register):
    """Register which workload reads a model file by its suffix: ``register(".onnx", "onnx")``.

    ``[workload] file = "net.onnx"`` without a ``model`` picks the workload registered for the
    file's suffix (the model is pytest's ``pytest_collect_file``). That workload's builder takes
    the path as its ``file`` option: ``build(file=path, batch=..., dtype=..., phase=..., **options)``.
    """


@hookspec
def optmap_register_ops(register):
    """Register operation kinds of the workload IR: ``register("lstm", LSTM())``.

    The value is an :class:`optmap.workload.OpKind` whose ``name`` equals the registered name; it
    says how many parameters, MACs and FLOPs per pass a layer of that kind is.
    """


@hookspec
def optmap_register_dtypes(register):
    """Register number formats: ``register("fp4", 0.5)`` (bytes per element)."""


@hookspec
def optmap_register_accelerators(register):
    """Register accelerators: a preset value or a factory of keyword options.

    ``register("tpu-v3", Accelerator(...))`` registers a preset; the extra keys of a
    ``[[system.groups]]`` table that names it override its datasheet figures (``memory_gib``,
    ``peak_tflops``, ...). ``register("vc709", build_vc709)`` registers a factory: the extra keys
    of the group table are its keyword options, and it returns an
    :class:`optmap.system.Accelerator` (or a subclass carrying more attributes).
    """


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
    :class:`optmap.cost.CostModel`.
    """


@hookspec
def optmap_register_search_engines(register):
    """Register search engines: ``register("ga", GeneticSearch)``.

    An engine factory is called as ``factory(**options)`` and returns an
    :class:`optmap.search.SearchEngine`.
    """
