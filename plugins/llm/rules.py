"""Named starting plans of ``megatron-3d`` (the cost model's ``plans`` hook)."""

from __future__ import annotations

from optmap.space import Mapping


def megatron_rule(model) -> dict[str, Mapping]:
    """``megatron``: the Megatron-LM practitioners' rule of thumb (the largest tensor parallelism
    inside a node, the fewest pipeline stages that fit with full recomputation, the rest data
    parallel, micro-batch 1; Narayanan et al. SC'21 §3 takeaways); a MoE model takes the most
    expert parallelism the replicas allow, with sequence parallelism (:mod:`.moe`)."""
    gpn = int(model.system.params.get("gpus_per_node", 8))
    choices = {v.name: v.choices for v in model.space.variables}
    t = max(c for c in choices["tensor_parallel"] if c <= gpn)
    rc = "full" if "full" in choices["recompute"] else choices["recompute"][-1]
    etp = choices["expert_tensor_parallel"][0]  # 1 unless the cost option pins another size
    for p in choices["pipeline_parallel"]:
        ds = [d for d in choices["data_parallel"] if t * p * d <= model.n]
        if not ds or 1 not in choices["microbatch_size"]:
            continue
        d = max(ds)
        ep = max(e for e in choices["expert_parallel"] if (t * d) % (e * etp) == 0)
        plan = {"tensor_parallel": t, "pipeline_parallel": p, "data_parallel": d, "microbatch_size": 1,
                "interleaving": 1, "recompute": rc, "sequence_parallel": model.config.moe is not None,
                "optimizer_sharding": False, "dp_overlap": False, "context_parallel": 1, "expert_parallel": ep,
                "fsdp": False, "offload": choices["offload"][0],
                "grad_reduce_in_fp32": choices["grad_reduce_in_fp32"][0], "expert_tensor_parallel": etp}
        mapping = model.space.mapping(plan)
        if model.evaluate(mapping).feasible:
            return {"megatron": mapping}
    return {}
