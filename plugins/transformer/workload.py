"""The ``transformer`` workload: a TransformerConfig rendered as an optmap Workload.

Decision (issue 5, item 1): the builder returns a :class:`TransformerWorkload`, an ordinary
:class:`optmap.workload.Workload` (built with :class:`WorkloadBuilder`, so every generic tool —
``optmap show``, FLOP totals, other cost models — sees real layers) that also carries the
:class:`TransformerConfig` it came from. The ``acctfm`` cost model reads the config's Megatron
blocks (one compute op and one All-Reduce per direction, see ``config.py``); the layer graph
is their itemised view, and both give identical FLOPs (tested).

Layer names are ``<block>.<op>`` with the block names of the cost model (``enc0.self_attn.q``,
``dec5.ffn.w2``, ...), so a per-block row of a cost report is the sum of the layers under its
prefix. Per block:

* attention (self or cross): ``norm`` (pre-LN) → ``q``, ``k``, ``v`` (linear d_model → heads·head_dim)
  → ``scores`` (matmul Q·Kᵀ) → ``softmax`` → ``context`` (matmul ·V) → ``out`` (linear back to
  d_model) → ``residual`` (add) [→ ``norm`` when post-LN]. Cross-attention takes K and V from the
  encoder output (``enc.final_norm`` in pre-LN stacks), or from the ``memory`` input of a
  ``kind = "decoder"`` config (a decoder with cross-attention but no encoder).
* ffn: ``norm`` → ``w1`` → ``act`` (ReLU, paper Eq. 2, for encoder-decoder models; GELU for the
  BERT/GPT-2 families unless ``activation`` is given) → ``w2`` → ``residual``. A gated MLP
  (``gated_mlp``, SwiGLU) has ``w1`` (gate) → ``act`` (SiLU) and ``w3`` (up), joined by ``gate``
  (op ``mul``, the element-wise product, :mod:`.ops`) before ``w2``.
* grouped-query attention (``kv_heads`` < ``heads``): ``k`` and ``v`` project to kv_heads·head_dim
  and are repeated to the query width before the attention matmuls (``k_expand``, ``v_expand``: a
  concat of the projection and identity copies, Hugging Face's ``repeat_kv``), so the matmul MACs
  are exactly the grouped attention's.
* sliding-window attention (``sliding_window`` keys, every ``full_attention_every``-th layer full;
  :mod:`optmap.workload.window`): a windowed layer's ``scores`` and ``context`` take a band of
  ``sliding_window`` keys and values (``k_window``, ``v_window``: slices, no FLOPs), so its
  products are ``S × window`` as the config counts them.

Representation limits (the IR has no reshape, gather or embedding op):

* Heads are folded into the feature dimension: ``scores`` is one (S, S_kv) matmul with contraction
  heads·head_dim, which has exactly the multi-head MAC count (heads · S · S_kv · head_dim); only
  the element counts of the score tensor (softmax) are ``heads`` times too small. Causal masks
  are not represented (standard kernels compute the full score matrix anyway).
* The inputs (``input``; ``tgt_input`` for the decoder of an encoder-decoder) stand for the summed
  token and position embeddings [S, d_model]; embedding tables, BERT's pooler and dropout are not
  layers. ``lm_head`` (bias-free linear to the vocabulary) is present when the config computes the
  output projection; with a tied output its weight *is* the (target) embedding matrix.
  So the IR's parameter count is the block parameters + embedding and final norms (+ the head weight), not
  ``config.params`` (which also counts embeddings and the pooler, and is the Table 2 figure).
"""

from __future__ import annotations

from functools import partial
from typing import Literal

from optmap.bounds import MAX_DIMENSION, Batch, Depth, Dimension, floats, ints
from optmap.errors import OptmapError, did_you_mean
from optmap.workload import DeferredGraph, Workload, WorkloadBuilder
from optmap.workload.general_ops import COPY, SLICE
from optmap.workload.mla import MLAConfig
from optmap.workload.moe import MoEConfig
from optmap.workload.transformer import TransformerConfig, TransformerWorkload

from .ops import MUL
from .presets import PRESETS

# Config fields a problem file may set (the rest keep their preset / dataclass defaults).
_FIELDS = ("kind", "layers", "decoder_layers", "d_model", "heads", "head_dim", "d_ff", "seq_len",
           "src_seq_len", "vocab", "bias", "kv_heads", "gated_mlp", "max_positions", "tied_output", "mtp_layers",
           "sliding_window", "full_attention_every", "dropout")
_MAY_BE_ZERO = ("max_positions", "mtp_layers", "sliding_window", "full_attention_every", "dropout")
_REQUIRED = ("kind", "layers", "d_model", "heads", "d_ff", "seq_len", "vocab")
_MOE_KEYS = ("experts", "top_k", "d_ff", "shared_experts", "shared_d_ff", "dense_layers", "groups",
             "group_top_k")
_MLA_KEYS = ("kv_lora_rank", "q_lora_rank", "rope_head_dim", "v_head_dim")


def _table(name: str, table: dict, base, keys: tuple[str, ...], required: dict[str, str], kind: type):
    """A ``[workload.NAME]`` table of non-negative integers as a ``kind`` config, over the preset's."""
    for key, value in table.items():
        if key not in keys:
            raise OptmapError(f"[workload.{name}]: unknown key '{key}'{did_you_mean(key, keys)}; valid keys: "
                              f"{', '.join(keys)}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise OptmapError(f"[workload.{name}] {key} must be a non-negative integer, got {value!r}")
    given = {**(base.__dict__ if base else {}), **table}
    missing = [key for key in required if key not in given]
    if missing:
        raise OptmapError(f"[workload.{name}]: give {', '.join(missing)} "
                          f"({', '.join(required[key] for key in missing)})")
    try:
        return kind(**given)
    except ValueError as exc:
        raise OptmapError(f"[workload.{name}] {str(exc).removeprefix(f'{name}: ')}") from None


def _moe(table: dict, base: MoEConfig | None) -> MoEConfig:
    """The ``[workload.moe]`` table as a :class:`MoEConfig`, over the preset's when it has one."""
    return _table("moe", table, base, _MOE_KEYS, {"experts": "experts per layer", "top_k": "experts per token",
                                                  "d_ff": "each expert's MLP width"}, MoEConfig)


def _mla(table: dict, base: MLAConfig | None) -> MLAConfig:
    """The ``[workload.mla]`` table as an :class:`MLAConfig`, over the preset's when it has one."""
    return _table("mla", table, base, _MLA_KEYS, {"kv_lora_rank": "the compressed key-value width"}, MLAConfig)


def _repeat(b: WorkloadBuilder, x: str, times: int, name: str) -> str:
    """``x`` repeated ``times`` along its features (GQA's repeat_kv; identity copies, no FLOPs)."""
    if times == 1:
        return x
    copies = [b.dropout(x, p=0.0, name=f"{name}_copy{i}") for i in range(1, times)]  # p = 0: identity
    return b.concat(x, *copies, axis=-1, name=name)


def _attention(b: WorkloadBuilder, x: str, prefix: str, inner: int, kv_inner: int, pre_ln: bool,
               bias: bool, memory: str | None, window: int = 0) -> str:
    """One (self- or cross-) attention block, over a band of ``window`` keys when given; returns its output."""
    d = b.shape(x)[-1]
    h = b.layernorm(x, name=f"{prefix}.norm") if pre_ln else x
    kv = h if memory is None else memory
    q = b.linear(h, inner, bias=bias, name=f"{prefix}.q")
    k = b.linear(kv, kv_inner, bias=bias, name=f"{prefix}.k")
    v = b.linear(kv, kv_inner, bias=bias, name=f"{prefix}.v")
    if window and window < b.shape(k)[0]:  # each query against its window of keys (optmap.workload.window)
        k, v = (b.op(SLICE, t, (window, kv_inner), name=f"{prefix}.{n}_window") for n, t in (("k", k), ("v", v)))
    k = _repeat(b, k, inner // kv_inner, f"{prefix}.k_expand")
    v = _repeat(b, v, inner // kv_inner, f"{prefix}.v_expand")
    s = b.matmul(q, k, transpose_b=True, name=f"{prefix}.scores")  # Eq. 1: Q·Kᵀ (heads folded)
    p = b.activation(s, "softmax", name=f"{prefix}.softmax")
    c = b.matmul(p, v, name=f"{prefix}.context")  # Eq. 1: softmax(·)·V
    o = b.linear(c, d, bias=bias, name=f"{prefix}.out")
    y = b.add(x, o, name=f"{prefix}.residual")
    return y if pre_ln else b.layernorm(y, name=f"{prefix}.norm")


def _latent_attention(b: WorkloadBuilder, x: str, prefix: str, cfg: TransformerConfig) -> str:
    """One multi-head latent attention block (:mod:`optmap.workload.mla`; pre-LN): the compressed
    query and key-value latents, their up-projections (keys and values as two linears of the same
    FLOPs as the one ``kv_up``), the shared rotary key copied to every head (a ``copy``, no FLOPs),
    then Eq. 1 over ``q_head_dim`` and ``v_head_dim`` per head."""
    mla, heads = cfg.mla, cfg.heads
    h = b.layernorm(x, name=f"{prefix}.norm")
    if mla.q_lora_rank:
        c_q = b.layernorm(b.linear(h, mla.q_lora_rank, bias=False, name=f"{prefix}.q_down"), name=f"{prefix}.q_norm")
        q = b.linear(c_q, heads * cfg.q_head_dim, bias=False, name=f"{prefix}.q_up")
    else:
        q = b.linear(h, heads * cfg.q_head_dim, bias=False, name=f"{prefix}.q")
    c_kv = b.layernorm(b.linear(h, mla.kv_lora_rank, bias=False, name=f"{prefix}.kv_down"), name=f"{prefix}.kv_norm")
    k = b.linear(c_kv, heads * cfg.head_dim, bias=False, name=f"{prefix}.k_up")
    v = b.linear(c_kv, heads * cfg.v_head_dim, bias=False, name=f"{prefix}.v_up")
    if mla.rope_head_dim:
        rope = b.linear(h, mla.rope_head_dim, bias=False, name=f"{prefix}.k_rope")
        shared = b.op(COPY, rope, (cfg.seq_len, heads * mla.rope_head_dim), name=f"{prefix}.k_rope_expand")
        k = b.concat(k, shared, axis=-1, name=f"{prefix}.k")
    s = b.matmul(q, k, transpose_b=True, name=f"{prefix}.scores")  # Eq. 1: Q·Kᵀ (heads folded)
    p = b.activation(s, "softmax", name=f"{prefix}.softmax")
    c = b.matmul(p, v, name=f"{prefix}.context")  # Eq. 1: softmax(·)·V
    o = b.linear(c, cfg.d_model, bias=False, name=f"{prefix}.out")
    return b.add(x, o, name=f"{prefix}.residual")


def _mlp(b: WorkloadBuilder, n: str, prefix: str, d_ff: int, bias: bool, activation: str, gated: bool,
         tag: str = "") -> str:
    """The MLP's GEMMs on ``n``: w1 → act (→ ⊙ w3 when gated) → w2 (names ``prefix.{tag}w1``...)."""
    d = b.shape(n)[-1]
    name = lambda op: f"{prefix}.{tag}{op}"  # noqa: E731
    h = b.linear(n, d_ff, bias=bias, name=name("w1"))  # Eq. 2: x·W1 + b1 (the gate when gated)
    h = b.activation(h, activation, name=name("act"))
    if gated:  # SwiGLU (Shazeer 2020): act(x·W1) ⊙ x·W3, the product an op kind of this plugin
        up = b.linear(n, d_ff, bias=bias, name=name("w3"))
        h = b.op(MUL, (h, up), b.shape(h), name=name("gate"))
    return b.linear(h, d, bias=bias, name=name("w2"))  # Eq. 2: ·W2 + b2


def _ffn(b: WorkloadBuilder, x: str, prefix: str, d_ff: int, pre_ln: bool, bias: bool, activation: str,
         gated: bool) -> str:
    n = b.layernorm(x, name=f"{prefix}.norm") if pre_ln else x
    y = b.add(x, _mlp(b, n, prefix, d_ff, bias, activation, gated), name=f"{prefix}.residual")
    return y if pre_ln else b.layernorm(y, name=f"{prefix}.norm")


def _moe_ffn(b: WorkloadBuilder, x: str, prefix: str, cfg: TransformerConfig, pre_ln: bool, activation: str) -> str:
    """A mixture-of-experts MLP as the compute one token sees: ``router`` (linear to the experts'
    logits, then softmax) and the ``top_k`` routed experts folded into one MLP of width top_k·d_ff
    (``expert_w1`` ...; the same GEMM FLOPs), plus the shared experts' MLP (``shared_w1`` ...). The graph has no
    gather or scatter op, so token routing is not drawn and only active expert weights appear."""
    moe = cfg.moe
    n = b.layernorm(x, name=f"{prefix}.norm") if pre_ln else x
    b.activation(b.linear(n, moe.experts, bias=False, name=f"{prefix}.router"), "softmax", name=f"{prefix}.route")
    out = _mlp(b, n, prefix, moe.top_k * moe.d_ff, cfg.bias, activation, cfg.gated_mlp, "expert_")
    if moe.shared_experts:
        shared = _mlp(b, n, prefix, moe.shared_width, cfg.bias, activation, cfg.gated_mlp, "shared_")
        out = b.add(out, shared, name=f"{prefix}.combine")
    y = b.add(x, out, name=f"{prefix}.residual")
    return y if pre_ln else b.layernorm(y, name=f"{prefix}.norm")


def transformer_graph(cfg: TransformerConfig, activation: str | None = None) -> WorkloadBuilder:
    """The layer graph of ``cfg`` (see the module docstring for names and limits)."""
    act = activation or ("relu" if cfg.kind == "encoder-decoder" else "silu" if cfg.gated_mlp else "gelu")
    pre_ln = cfg.final_norm  # pre-LN stacks end with a final norm (GPT-2, the TF models); BERT is post-LN
    d, inner = cfg.d_model, cfg.inner
    b = WorkloadBuilder(cfg.name, (cfg.src_len if cfg.kind == "encoder-decoder" else cfg.seq_len, d))
    x = b.layernorm("input", name="embed_norm") if cfg.embedding_norm else "input"
    memory = None
    if cfg.kind == "decoder":
        memory = b.input((cfg.src_len, d), "memory")
    blocks = cfg.blocks()
    for stack in dict.fromkeys(bl.stack for bl in blocks):
        if stack == "dec" and cfg.kind == "encoder-decoder":
            memory = x  # the encoder output feeds every cross-attention
            x = b.input((cfg.seq_len, d), "tgt_input")
        for blk in (bl for bl in blocks if bl.stack == stack):
            if blk.kind == "ffn" and cfg.is_moe_layer(blk.layer):
                x = _moe_ffn(b, x, blk.name, cfg, pre_ln, act)
            elif blk.kind == "ffn":
                x = _ffn(b, x, blk.name, cfg.d_ff, pre_ln, cfg.bias, act, cfg.gated_mlp)
            elif cfg.mla is not None:
                x = _latent_attention(b, x, blk.name, cfg)
            else:
                x = _attention(b, x, blk.name, inner, cfg.kv_inner, pre_ln, cfg.bias,
                               memory if blk.kind == "cross_attn" else None,
                               cfg.sliding_window if cfg.is_windowed_layer(blk.layer) else 0)
        if cfg.final_norm:
            x = b.layernorm(x, name=f"{stack}.final_norm")
    if cfg.lm_head:
        b.linear(x, cfg.vocab, bias=False, name="lm_head")
    for k in range(cfg.mtp_layers):  # DeepSeek-V3 §2.2: [norm(h); norm(embedding)] · M, a layer, the head
        joined = b.concat(b.layernorm(x, name=f"mtp{k}.hnorm"), b.layernorm("input", name=f"mtp{k}.enorm"), axis=-1,
                          name=f"mtp{k}.concat")
        x = b.linear(joined, d, bias=False, name=f"mtp{k}.proj")
        x = _latent_attention(b, x, f"mtp{k}.self_attn", cfg) if cfg.mla else _attention(
            b, x, f"mtp{k}.self_attn", inner, cfg.kv_inner, pre_ln, cfg.bias, None,
            cfg.sliding_window if cfg.is_windowed_layer(cfg.layers - 1) else 0)
        x = _moe_ffn(b, x, f"mtp{k}.ffn", cfg, pre_ln, act) if cfg.moe else _ffn(
            b, x, f"mtp{k}.ffn", cfg.d_ff, pre_ln, cfg.bias, act, cfg.gated_mlp)
        b.linear(b.layernorm(x, name=f"mtp{k}.norm"), cfg.vocab, bias=False, name=f"mtp{k}.head")
    return b


def graph_workload(cfg: TransformerConfig, batch: int, dtype: str, phase: str, activation: str | None) -> Workload:
    """The layer graph of ``cfg`` as a plain Workload (what :func:`build` defers)."""
    return transformer_graph(cfg, activation).build(batch, dtype, phase)


def build(cfg: TransformerConfig, batch: int, dtype: str = "fp32", phase: str = "training",
          activation: str | None = None) -> TransformerWorkload:
    """The workload of a config, carrying the config; its layer graph is built on first use (a cost
    model that reads only the config, such as megatron-3d, never builds it)."""
    graph = DeferredGraph(partial(graph_workload, cfg, batch, dtype, phase, activation))
    return TransformerWorkload(cfg.name, graph.layers_by_name, graph.producers, batch, dtype, phase, config=cfg)


def _config(preset: str | None, given: dict) -> TransformerConfig:
    if preset is not None:
        if preset not in PRESETS:
            raise OptmapError(f"unknown transformer preset '{preset}'{did_you_mean(preset, PRESETS)}")
        base = PRESETS[preset]
        if {"heads", "d_model"} & set(given) and "head_dim" not in given:  # the preset's head_dim no longer holds
            given["head_dim"] = _head_dim(given.get("d_model", base.d_model), given.get("heads", base.heads),
                                          f"preset '{preset}' with ")
        return base.with_(**given) if given else base
    missing = [name for name in _REQUIRED if name not in given]
    if missing:
        raise OptmapError(
            f"transformer: without a preset, give {', '.join(missing)} (or preset = one of {', '.join(PRESETS)})"
        )
    if "head_dim" not in given:
        given["head_dim"] = _head_dim(given["d_model"], given["heads"])
    return TransformerConfig(name=f"transformer-{given['kind']}", **given)


def _head_dim(d_model: int, heads: int, where: str = "") -> int:
    """head_dim = d_model / heads, the one rule wherever head_dim is not given (a preset's own
    head_dim holds only for its own d_model and heads), refused when it does not divide."""
    if d_model % heads:
        raise OptmapError(f"transformer: {where}d_model = {d_model} is not divisible by heads = {heads}; choose "
                          f"sizes that divide, or give head_dim explicitly")
    return d_model // heads


def transformer(
    *,
    batch: Batch,
    dtype: str = "fp32",
    phase: str = "training",
    preset: str | None = None,
    kind: Literal["encoder", "decoder", "decoder-only", "encoder-decoder"] | None = None,
    layers: Depth | None = None,
    decoder_layers: Depth | None = None,
    d_model: Dimension | None = None,
    heads: Dimension | None = None,
    head_dim: Dimension | None = None,
    d_ff: Dimension | None = None,
    seq_len: Dimension | None = None,
    src_seq_len: Dimension | None = None,
    vocab: Dimension | None = None,
    bias: bool | None = None,
    kv_heads: Dimension | None = None,
    gated_mlp: bool | None = None,
    max_positions: Dimension | None = None,
    tied_output: bool | None = None,
    mtp_layers: ints(0, 64) | None = None,
    sliding_window: ints(0, MAX_DIMENSION) | None = None,
    full_attention_every: ints(0, 4096) | None = None,
    dropout: floats(0.0, 0.99) | None = None,
    activation: Literal["relu", "gelu", "silu"] | None = None,
    moe: dict[str, ints(0, MAX_DIMENSION)] | None = None,
    mla: dict[str, ints(0, MAX_DIMENSION)] | None = None,
) -> TransformerWorkload:
    """Transformer stack (encoder, decoder, decoder-only, encoder-decoder) from a preset or explicit sizes.

    ``preset``: TF8, TF16, TF32, TF64 (AccTFM Table 2; seq_len 256 is an assumption), bert-base,
    bert-large, gpt2, gpt2-medium, gpt2-large, gpt2-xl, the Megatron GPT models megatron-22b,
    gpt3-175b, turing-530b, megatron-1t, and Llama-style llama2-7b, llama2-70b, llama3-8b,
    llama3-70b (grouped-query attention, gated MLPs); any other key given overrides the preset.
    Wherever ``head_dim`` is not given it is d_model / heads (refused when that does not divide):
    overriding a preset's ``heads`` or ``d_model`` recomputes it rather than keep the preset's.
    ``kv_heads`` (grouped-query attention) must divide ``heads``; ``gated_mlp`` gives a SwiGLU MLP.
    Without a preset, kind, layers, d_model, heads, d_ff, seq_len and vocab are required
    (head_dim defaults to d_model / heads, decoder_layers is needed for encoder-decoder).
    ``activation`` only names the FFN non-linearity in the layer graph (no effect on costs).
    Mixture-of-experts presets: mixtral-8x7b, mixtral-8x22b, qwen3-30b-a3b, qwen3-235b-a22b,
    gpt-oss-120b; dense
    ones beside Llama: nemotron-4-340b, gpt3-5b, gpt3-20b (NeMo's GPT-3). ``moe`` (the
    ``[workload.moe]`` table: ``experts``, ``top_k``, ``d_ff`` per expert, ``shared_experts``,
    ``shared_d_ff`` per shared expert, ``dense_layers`` leading dense layers; optional ``groups``
    and ``group_top_k``, group-limited routing;
    :mod:`optmap.workload.moe`) makes the MLPs mixtures of experts, or overrides a MoE preset's
    keys. ``mla`` (the ``[workload.mla]`` table: ``kv_lora_rank``, ``q_lora_rank``,
    ``rope_head_dim``, ``v_head_dim``; :mod:`optmap.workload.mla`) gives decoder-only layers
    multi-head latent attention, as the ``deepseek-v3`` preset has (``head_dim`` is then the
    per-head key width without the rotary part). ``mtp_layers`` adds DeepSeek-V3's multi-token
    prediction modules (§2.2) after the last layer: a projection of the hidden state and the next
    token's embedding, one more layer and the shared output head each. ``sliding_window`` gives
    the layers sliding-window attention over that many keys, every ``full_attention_every``-th
    layer attending fully (:mod:`optmap.workload.window`; the ``gpt-oss-120b`` preset: 128, 2).
    ``dropout`` is the hidden and attention dropout probability in training (0 unless a preset of
    the Transformer, BERT, GPT-2/3 or Megatron-LM's GPT sets 0.1): with 0 no dropout mask is stored.
    """
    given = {name: value for name, value in locals().items() if name in _FIELDS and value is not None}
    for name, value in given.items():
        if isinstance(value, int) and not isinstance(value, bool) and value <= 0 and name not in _MAY_BE_ZERO:
            raise OptmapError(f"transformer: {name} must be a positive integer, got {value}")
    if moe is not None:
        base = PRESETS[preset].moe if preset in PRESETS else None
        given["moe"] = _moe(moe, base)
    if mla is not None:
        given["mla"] = _mla(mla, PRESETS[preset].mla if preset in PRESETS else None)
    try:
        cfg = _config(preset, given)
    except ValueError as exc:
        raise OptmapError(f"transformer: {exc}") from None
    return build(cfg, batch, dtype, phase, activation)
