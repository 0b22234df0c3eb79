"""The shared ``transformer`` workload builder: registration, layer graph, agreement with the config."""

import pytest

from optmap.errors import OptmapError
from optmap.host import load_host
from optmap.plugins.transformer.presets import PRESETS
from optmap.plugins.transformer.workload import TransformerWorkload, transformer
from optmap.workload import Workload
from optmap.workload.transformer import sizes_of


def test_registered_as_plugin():
    host = load_host()
    entry = host.get("workload", "transformer")
    assert entry.resolve() is transformer and entry.plugin == "transformer"


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_layer_graph_flops_equal_config(name):
    w = transformer(batch=3, preset=name)
    cfg = w.config
    assert isinstance(w, TransformerWorkload) and cfg is PRESETS[name]
    weighted = w.weighted_layers()
    assert sum(layer.flops(3).forward for layer in weighted) == 3 * cfg.flops_fwd()  # matmul FLOPs only
    # the IR's backward = 2 x forward for every GEMM, the config's bwd_factor
    assert sum(layer.flops(3).total for layer in weighted) == pytest.approx(3 * 3 * cfg.flops_fwd())
    # every block's GEMMs are listed under its name; the head is the only other weighted layer
    per_block = {b.name: b.flops_fwd for b in cfg.blocks()}
    for block, flops in per_block.items():
        assert sum(l.flops(1).forward for l in weighted if l.name.startswith(block + ".")) == flops
    assert {l.name for l in weighted if l.name.rpartition(".")[0] not in per_block} <= {"lm_head"}


def test_tf8_layers_and_params():
    w = transformer(batch=128, preset="TF8")
    ops = {layer.op for layer in w.layers()}
    assert {"linear", "matmul", "layernorm", "add", "activation", "input"} == ops
    names = {layer.name for layer in w.layers()}
    assert {"enc0.self_attn.q", "dec5.cross_attn.k", "dec5.ffn.w2", "enc.final_norm", "lm_head", "tgt_input"} <= names
    assert w.layer("dec0.cross_attn.k").in_shapes == ((256, 1024),)  # K, V from the encoder output
    assert w.inputs_of("dec0.cross_attn.k") == ("enc.final_norm",)
    assert w.layer("enc0.self_attn.scores").out_shape == (256, 256)  # heads folded into the contraction
    assert w.layer("enc0.ffn.act").attr("kind") == "relu"  # paper Eq. 2
    parts = w.config.param_breakdown()
    assert w.params == parts["blocks"] + parts["final_norms"] + 1024 * 32768  # + the tied head weight


def test_explicit_config_and_overrides():
    w = transformer(batch=4, kind="decoder-only", layers=2, d_model=64, heads=4, d_ff=256, seq_len=16,
                    vocab=100, dtype="fp16", phase="inference")
    assert w.config.head_dim == 16 and w.config.n_blocks == 4 and w.dtype == "fp16" and w.phase == "inference"
    assert w.layer("dec1.ffn.act").attr("kind") == "gelu"
    assert transformer(batch=2, preset="TF8", seq_len=64).config.seq_len == 64
    dec = transformer(batch=2, kind="decoder", layers=1, d_model=32, heads=2, d_ff=64, seq_len=8,
                      src_seq_len=12, vocab=10)
    assert dec.layer("memory").out_shape == (12, 32) and dec.config.n_blocks == 3


def test_errors_are_one_line():
    with pytest.raises(OptmapError, match="did you mean 'TF8'"):
        transformer(batch=2, preset="TF88")
    with pytest.raises(OptmapError, match="give kind, layers"):
        transformer(batch=2, d_model=64)
    with pytest.raises(OptmapError, match="positive"):
        transformer(batch=2, preset="TF8", seq_len=0)
    with pytest.raises(OptmapError, match="decoder_layers"):
        transformer(batch=2, kind="encoder-decoder", layers=1, d_model=8, heads=2, d_ff=8, seq_len=4, vocab=5)


def test_sizes_of_names_the_planner_and_the_fix():
    w = transformer(batch=2, preset="TF8")
    assert sizes_of(w, "x") is w.config
    graph = Workload(w.name, w.layers_by_name, w.producers, 2, "bf16", "training")  # the same layers, no sizes
    with pytest.raises(OptmapError) as err:
        sizes_of(graph, "the megatron-3d cost model plans a transformer")
    text = str(err.value)
    assert text.startswith("the megatron-3d cost model plans a transformer; use [workload] model = \"transformer\"")
    assert "\n" not in text and "is a layer graph" in text



def test_gated_mlp_joins_its_branches_with_a_product():
    # Llama-2-7B (SwiGLU): the gate is op 'mul' (this plugin's kind), registered for every command
    assert load_host().get("op", "mul").plugin == "transformer"
    w = transformer(batch=2, preset="llama2-7b")
    gate = w.layer("dec0.ffn.gate")
    assert gate.kind.name == "mul" and gate.params == 0
    # one multiplication per element forward, one per element per operand backward: 4096 x 11008
    per_sample = 4096 * 11008
    flops = gate.flops(2)
    assert (flops.forward, flops.backward_data, flops.weight_grad) == (2 * per_sample, 4 * per_sample, 0)
    # parameters by hand: 32 layers of q, k, v, o (4 x 4096^2), gate/up/down (3 x 4096 x 11008) and two
    # norms (2 x 2 x 4096, the IR's norms count a scale and a shift), the final norm and the untied head
    layer = 4 * 4096**2 + 3 * 4096 * 11008 + 2 * 2 * 4096
    assert sum(x.params for x in w.layers()) == 32 * layer + 2 * 4096 + 32000 * 4096


def test_overriding_a_presets_heads_recomputes_head_dim():
    """Issue 26: head_dim = d_model / heads wherever head_dim is not given, a preset's included
    (bert-base: d_model 768, 12 heads of 64); heads = 7 does not divide 768 and is refused."""
    assert transformer(batch=1, preset="bert-base", heads=16).config.head_dim == 768 // 16
    assert transformer(batch=1, preset="bert-base", heads=16).config.inner == 768
    with pytest.raises(OptmapError, match="d_model = 768 is not divisible by heads = 7"):
        transformer(batch=1, preset="bert-base", heads=7)
    assert transformer(batch=1, preset="bert-base", heads=7, head_dim=64).config.inner == 7 * 64  # given: kept


def test_layer_graph_deferred_until_used_then_the_eager_one():
    """The layer graph is built on first use (issue 25: megatron-3d reads only the config, and
    Llama 3.1 405B's graph has ~6,000 layers); once built it is exactly transformer_graph's."""
    from pathlib import Path

    from optmap.plugins.transformer.workload import transformer_graph
    from optmap.problem import load
    from optmap.run import solve

    problem = load(Path(__file__).parents[3] / "problems" / "llm" / "llama3.1-405b.toml",
                   ["system.groups.0.count=1024"])
    solve(problem)
    assert "built" not in problem.workload.layers_by_name.graph.__dict__  # a whole megatron-3d search built none
    w = transformer(batch=2, preset="TF8", dtype="bf16")
    eager = transformer_graph(PRESETS["TF8"]).build(2, "bf16")
    assert dict(w.layers_by_name) == dict(eager.layers_by_name) and dict(w.producers) == dict(eager.producers)
    assert w.order == eager.order and w.params == eager.params and w.flops() == eager.flops()
