"""An example third-party optmap plugin: an accelerator, a search engine and a formulation.

* accelerator ``tpu-v4`` — a Google Cloud TPU v4 chip (sources in :mod:`.hardware`);
* search engine ``anneal`` — vectorised simulated annealing over any design space (:mod:`.anneal`);
* cost model ``stage-pipeline`` — cut a network into pipeline stages and place them on devices,
  a permutation variable with a formulation-supplied repair (:mod:`.pipeline`);
* cost model ``replicas`` — data parallelism around any registered formulation, which it builds
  by name through the host: a composite formulation that nests a built-in (:mod:`.replicas`).

optmap finds this module through the entry point ``example = "optmap_example_plugin"`` in the
group ``optmap`` (see ``pyproject.toml``) and calls the hook implementations below with a
``register(name, factory)`` callable. Keep this module cheap to import: it runs on every
``optmap`` command, including ``optmap --help`` and ``optmap plugins``.
"""

from optmap.hookspecs import hookimpl

__version__ = "0.1.0"


@hookimpl
def optmap_register_accelerators(register):
    # An accelerator is a value, not a factory. The import is cheap (optmap.system is loaded by
    # the built-in hardware plugin anyway), and registering the object itself lets
    # `optmap plugins` show its docstring summary.
    from optmap_example_plugin.hardware import TPU_V4

    register(TPU_V4.name, TPU_V4)


@hookimpl
def optmap_register_search_engines(register):
    # Registered by import path: the engine module is imported only when a problem uses "anneal".
    register("anneal", "optmap_example_plugin.anneal:SimulatedAnnealing")


@hookimpl
def optmap_register_cost_models(register):
    # A formulation of its own, searched by optmap's generic engines with no change to optmap.
    register("stage-pipeline", "optmap_example_plugin.pipeline:StagePipeline")
    # A composite: it nests another registered formulation (built through the host by name).
    register("replicas", "optmap_example_plugin.replicas:Replicas")
