"""Built-in transformer workload, shared by the formulations that plan transformers (AccTFM, LLM).

Workload ``transformer``: an encoder, decoder, decoder-only or encoder-decoder stack from a
preset (:mod:`.presets`) or explicit sizes, rendered as an optmap layer graph that also carries
its :class:`~optmap.workload.transformer.TransformerConfig` (exact parameter counts,
per-block FLOPs and tensor-parallel message sizes; the core's :mod:`optmap.workload.transformer`,
shared with the plugins that plan transformers). Op kind ``mul`` (the
element-wise product of a gated MLP, :mod:`.ops`).
"""

from optmap.hookspecs import hookimpl


@hookimpl
def optmap_register_workloads(register):
    register("transformer", "optmap.plugins.transformer.workload:transformer")


@hookimpl
def optmap_register_ops(register):
    from optmap.plugins.transformer.ops import MUL  # the IR installs op kinds when the host loads

    register(MUL.name, MUL)
