"""Built-in transformer workload, shared by the formulations that plan transformers (AccTFM, LLM).

Workload ``transformer``: an encoder, decoder, decoder-only or encoder-decoder stack from a
preset (:mod:`.presets`) or explicit sizes, rendered as an optmap layer graph that also carries
its :class:`~optmap.plugins.transformer.config.TransformerConfig` (exact parameter counts,
per-block FLOPs and tensor-parallel message sizes, :mod:`.config`).
"""

from optmap.hookspecs import hookimpl


@hookimpl
def optmap_register_workloads(register):
    register("transformer", "optmap.plugins.transformer.workload:transformer")
