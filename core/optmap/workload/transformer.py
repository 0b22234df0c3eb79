"""Transformer configurations: exact parameter counts, per-block FLOPs and Megatron message sizes.

Shared by every plugin that plans transformers (the ``transformer`` workload builds the layer graph
and carries its config in a :class:`TransformerWorkload`; AccTFM and the LLM planner read the
config), so it lives in the core: shapes and arithmetic of the model, no mapping method.

The pipelining unit is the **Megatron block** (seed note §5 D1): a column-parallel → row-parallel
pair with one compute op and one All-Reduce per direction (Megatron's f/g operators, note §1.1):

- ``self_attn``  : Q,K,V column-parallel, output linear row-parallel;
- ``cross_attn`` : Q (from the decoder) and K,V (from the encoder output) column-parallel,
  output linear row-parallel;
- ``ffn``        : W1 column-parallel, W2 row-parallel (paper Eq. 2).

An encoder layer is (self_attn, ffn); a decoder layer of an encoder-decoder model is
(self_attn, cross_attn, ffn); a decoder-only layer is (self_attn, ffn). The forward chain is all
encoder blocks then all decoder blocks; the backward chain is its reverse.

What is counted
---------------
``params`` counts every trainable tensor: token embeddings (one matrix per vocabulary; an
encoder-decoder has a source and a target matrix unless ``shared_embeddings``), learned position
embeddings (``max_positions`` rows, 0 = sinusoidal), token-type embeddings, every linear weight and
(if ``bias``) its bias, one LayerNorm per block (``norm_params`` values per channel: 2 = γ and β),
an embedding LayerNorm (BERT), one final LayerNorm per stack (pre-LN models), the BERT pooler
(dense d×d + bias). The output projection is tied to the (target) token embedding and adds nothing
when ``tied_output``; otherwise it adds d·vocab (+ vocab bias if ``bias``).

FLOPs are matrix-multiply FLOPs only (2 per multiply-accumulate); softmax, LayerNorm, residual and
activation element-wise work is left to the efficiency curve of the compute model. Attention
scores and the attention-weighted sum are counted in full (causal masking does not halve the
work in standard kernels). Backward FLOPs = ``bwd_factor`` × forward (default 2: dX and dW for
every weight GEMM, and both operand gradients for the two attention GEMMs).

Message sizes are elements (multiply by bytes per element at the cost-model level). Forward: the
row-parallel output [b, S, d_model] (Megatron's g operator). Backward: the block-input gradient
[b, S, d_model] (Megatron's f operator); a cross-attention block additionally All-Reduces the
gradient of the encoder output [b, S_src, d_model] (the f operator in front of its K,V linear),
fused into the same message when ``cross_kv_grad`` (default True, Megatron's behaviour).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np

from optmap.errors import OptmapError
from optmap.workload import mla as latent
from optmap.workload import moe as moe_mlp
from optmap.workload import window as swa
from optmap.workload.graph import Workload
from optmap.workload.mla import MLAConfig
from optmap.workload.moe import MoEConfig

Kind = Literal["encoder", "decoder", "decoder-only", "encoder-decoder"]
BlockKind = Literal["self_attn", "cross_attn", "ffn"]


@dataclass(frozen=True)
class Block:
    """One Megatron block of the layer chain; all sizes are per sample (scale linearly in batch)."""

    index: int  # position in the forward chain
    layer: int  # transformer layer index within its stack
    stack: Literal["enc", "dec"]
    kind: BlockKind
    tokens: int  # rows of the block's GEMMs per sample (= its query sequence length)
    flops_fwd: float  # forward FLOPs per sample (whole model, before the split over devices)
    flops_bwd: float  # backward FLOPs per sample
    msg_fwd: int  # forward All-Reduce elements per sample
    msg_bwd: int  # backward All-Reduce elements per sample
    mask_source: int  # index of the self_attn block whose attention scores drive the token mask (note D10)
    params: int

    @property
    def name(self) -> str:
        return f"{self.stack}{self.layer}.{self.kind}"

    @property
    def computes_mask(self) -> bool:
        """True when this block's attention produces the token mask (its ``An`` is All-Reduced)."""
        return self.mask_source == self.index


@dataclass(frozen=True)
class BlockArrays:
    """Per-block arrays in forward chain order (length L = number of blocks), per sample."""

    names: tuple[str, ...]
    tokens: np.ndarray
    flops_fwd: np.ndarray
    flops_bwd: np.ndarray
    msg_fwd: np.ndarray
    msg_bwd: np.ndarray
    computes_mask: np.ndarray  # bool


@dataclass(frozen=True)
class TransformerConfig:
    """A transformer; ``layers`` is the encoder (or only) stack depth, ``decoder_layers`` the decoder's."""

    name: str
    kind: Kind
    layers: int
    d_model: int
    heads: int
    head_dim: int
    d_ff: int
    seq_len: int
    vocab: int
    decoder_layers: int = 0  # encoder-decoder only
    src_seq_len: int | None = None  # cross-attention memory length; None = seq_len
    max_positions: int = 0  # learned position-embedding rows (0 = sinusoidal, no parameters)
    type_vocab: int = 0  # token-type (segment) embedding rows (BERT: 2)
    bias: bool = True  # biases on every linear
    norm_params: int = 2  # parameters per channel of each LayerNorm (γ, β)
    embedding_norm: bool = False  # LayerNorm after the embeddings (BERT)
    final_norm: bool = False  # one final LayerNorm per stack (pre-LN models)
    pooler: bool = False  # BERT pooler dense d×d + bias
    tied_output: bool = True  # output projection shares the (target) embedding matrix
    shared_embeddings: bool = False  # encoder-decoder: one matrix for source and target
    lm_head: bool = True  # the output projection to the vocabulary is computed (FLOPs)
    cross_kv_grad: bool = True  # cross-attn bwd All-Reduce also carries d(encoder output)
    bwd_factor: float = 2.0  # backward FLOPs / forward FLOPs
    kv_heads: int | None = None  # key/value heads (grouped-query attention, Ainslie et al. 2023); None = heads
    gated_mlp: bool = False  # gated MLP (SwiGLU, Shazeer 2020): gate and up projections d×d_ff, down d_ff×d
    moe: MoEConfig | None = None  # mixture-of-experts MLPs (:mod:`optmap.workload.moe`); None = dense
    mla: MLAConfig | None = None  # multi-head latent attention (:mod:`optmap.workload.mla`); None = Q, K, V
    mtp_layers: int = 0  # multi-token prediction modules after the last layer (DeepSeek-V3 §2.2)
    sliding_window: int = 0  # keys a windowed layer's query attends to (:mod:`optmap.workload.window`); 0 = none
    full_attention_every: int = 0  # with a window: every n-th layer attends fully (0: every layer windowed)
    # hidden and attention dropout probability in training: 0 as today's LLMs train (Llama 3, Mixtral,
    # Qwen3, DeepSeek-V3, Nemotron-4 configs), 0.1 for the Transformer, BERT, GPT-2/3 and Megatron-LM's GPT
    dropout: float = 0.0

    def __post_init__(self):
        if self.kind not in ("encoder", "decoder", "decoder-only", "encoder-decoder"):
            raise ValueError(f"unknown transformer kind {self.kind!r}")
        if self.kind == "encoder-decoder" and self.decoder_layers <= 0:
            raise ValueError("an encoder-decoder config needs decoder_layers > 0")
        if self.kv_heads is not None and (self.kv_heads < 1 or self.heads % self.kv_heads):
            raise ValueError(f"kv_heads {self.kv_heads} must divide heads {self.heads}")
        if self.moe is not None and self.kind != "decoder-only":
            raise ValueError("mixture-of-experts layers are modelled for decoder-only stacks only")
        if self.mla is not None and (self.kind != "decoder-only" or self.kv_heads is not None):
            raise ValueError("latent attention (mla) is modelled for decoder-only stacks without kv_heads")
        if self.mtp_layers < 0 or (self.mtp_layers and self.kind != "decoder-only"):
            raise ValueError(f"mtp_layers = {self.mtp_layers}: multi-token prediction is for decoder-only stacks, >= 0")
        swa.validate(self.sliding_window, self.full_attention_every)
        if self.sliding_window and (self.mla is not None or self.kind != "decoder-only"):
            raise ValueError("sliding-window attention is modelled for decoder-only stacks without latent attention")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout = {self.dropout}: a probability in [0, 1)")
        if self.moe is not None and self.moe.dense_layers > self.layers:
            raise ValueError(f"moe: dense_layers = {self.moe.dense_layers} exceeds layers = {self.layers}")

    # ---- shapes -------------------------------------------------------------------------------
    @property
    def inner(self) -> int:
        """Attention inner width heads × head_dim (paper Table 2: d_k = d_v = 128)."""
        return self.heads * self.head_dim

    @property
    def q_head_dim(self) -> int:
        """Query (and key) width per head: ``head_dim``, plus the rotary dimensions with latent attention."""
        return self.head_dim + (self.mla.rope_head_dim if self.mla else 0)

    @property
    def v_head_dim(self) -> int:
        """Value (attention output) width per head: ``head_dim`` unless latent attention sets its own."""
        return (self.mla.v_head_dim or self.head_dim) if self.mla else self.head_dim

    @property
    def qkv_widths(self) -> tuple[int, int, int]:
        """Widths of the queries, keys and values attention reads (all heads): ``inner``, ``kv_inner``
        twice, or with latent attention the up-projected per-head keys (with the shared rotary part)."""
        if self.mla is not None:
            return self.heads * self.q_head_dim, self.heads * self.q_head_dim, self.heads * self.v_head_dim
        return self.inner, self.kv_inner, self.kv_inner

    @property
    def attention_input_width(self) -> int:
        """Width of what the column-parallel attention linears read (tensor parallelism gathers or
        reduces it): ``d_model``, or latent attention's compressed latents and rotary key."""
        if self.mla is None:
            return self.d_model
        return (self.mla.q_lora_rank or self.d_model) + self.mla.kv_lora_rank + self.mla.rope_head_dim

    def attention_linears(self) -> list[tuple[str, int, int, str]]:
        """(name, input width, output width, tensor-parallel split) of a self-attention block's linears:
        QKV column-parallel and the output row-parallel, or latent attention's (:mod:`optmap.workload.mla`)."""
        if self.mla is not None:
            return latent.linears(self.mla, self.d_model, self.heads, self.head_dim)
        return [("qkv", self.d_model, self.inner + 2 * self.kv_inner, "column"), ("out", self.inner, self.d_model, "row")]

    @property
    def kv_inner(self) -> int:
        """Key (and value) projection width kv_heads × head_dim (= inner without GQA)."""
        return (self.heads if self.kv_heads is None else self.kv_heads) * self.head_dim

    @property
    def mlp_in(self) -> int:
        """Output width of the MLP's first linear: d_ff, or 2·d_ff for a gated MLP (gate and up)."""
        return 2 * self.d_ff if self.gated_mlp else self.d_ff

    @property
    def src_len(self) -> int:
        return self.seq_len if self.src_seq_len is None else self.src_seq_len

    @property
    def causal(self) -> bool:
        return self.kind in ("decoder", "decoder-only")

    def _stacks(self) -> list[tuple[str, int, tuple[BlockKind, ...]]]:
        enc = ("self_attn", "ffn")
        dec = ("self_attn", "cross_attn", "ffn")
        if self.kind == "encoder":
            return [("enc", self.layers, enc)]
        if self.kind == "decoder-only":
            return [("dec", self.layers, enc)]
        if self.kind == "decoder":
            return [("dec", self.layers, dec)]
        return [("enc", self.layers, enc), ("dec", self.decoder_layers, dec)]

    # ---- parameters -----------------------------------------------------------------------------
    @property
    def moe_layers(self) -> int:
        """Layers whose MLP is a mixture of experts (all but the leading dense ones; 0 when dense)."""
        return 0 if self.moe is None else self.layers - self.moe.dense_layers

    def is_moe_layer(self, layer: int) -> bool:
        return self.moe is not None and layer >= self.moe.dense_layers

    def is_windowed_layer(self, layer: int) -> bool:
        """True where ``layer`` (0-based) attends to the sliding window (:mod:`optmap.workload.window`)."""
        return swa.is_windowed(layer, self.sliding_window, self.full_attention_every)

    @property
    def windowed_layers(self) -> int:
        """Layers that attend to the sliding window (0 without one)."""
        return sum(self.is_windowed_layer(layer) for layer in range(self.layers))

    def _block_params(self, kind: BlockKind, moe_layer: bool = False) -> int:
        d, a, kv, b = self.d_model, self.inner, self.kv_inner, int(self.bias)
        norm = self.norm_params * d  # one LayerNorm per block
        if kind == "ffn" and moe_layer:  # router + every expert (optmap.workload.moe)
            return moe_mlp.layer_params(self.moe, d, self.gated_mlp, self.bias) + norm
        if kind == "ffn":
            f = self.mlp_in
            return d * f + b * f + self.d_ff * d + b * d + norm  # Eq. 2: W1,b1,W2,b2 (W1 = gate+up if gated)
        if self.mla is not None:  # DeepSeek-V2 §2.1: low-rank projections (optmap.workload.mla)
            return latent.attention_params(self.mla, d, self.heads, self.head_dim) + norm
        return (d * a + b * a) + 2 * (d * kv + b * kv) + a * d + b * d + norm  # Q; K,V (GQA width); output

    @property
    def layer_params(self) -> int:
        """Parameters of one self-attention + dense MLP layer (a decoder-only or encoder layer)."""
        return self._block_params("self_attn") + self._block_params("ffn")

    @property
    def moe_layer_params(self) -> int:
        """Parameters of one self-attention + MoE MLP layer (0 for a dense model)."""
        return self._block_params("self_attn") + self._block_params("ffn", True) if self.moe else 0

    def param_breakdown(self) -> dict[str, int]:
        """Trainable parameters by component (see the module docstring for what is counted)."""
        d = self.d_model
        n_emb = 1 if self.kind != "encoder-decoder" or self.shared_embeddings else 2
        out = {
            "token_embeddings": n_emb * self.vocab * d,
            "position_embeddings": self.max_positions * d,
            "type_embeddings": self.type_vocab * d,
            "embedding_norm": self.norm_params * d if self.embedding_norm else 0,
            "blocks": sum(self._block_params(k, self.is_moe_layer(layer))
                          for _, n, kinds in self._stacks() for layer in range(n) for k in kinds),
            "final_norms": self.norm_params * d * len(self._stacks()) if self.final_norm else 0,
            "pooler": d * d + d if self.pooler else 0,
            "output_head": 0 if self.tied_output else d * self.vocab + int(self.bias) * self.vocab,
            "mtp": self.mtp_layers * self.mtp_params,
        }
        return out

    @property
    def params(self) -> int:
        return sum(self.param_breakdown().values())

    @property
    def mtp_params(self) -> int:
        """Parameters of one multi-token prediction module (DeepSeek-V3 §2.2): the projection of the
        normalised hidden state and next-token embedding (2d → d), their two norms, one transformer
        layer (a MoE one in a MoE model) and the norm before the shared output head."""
        d = self.d_model
        layer = self.moe_layer_params if self.moe else self.layer_params
        return 2 * d * d + 3 * self.norm_params * d + layer

    @property
    def active_params(self) -> int:
        """Parameters one token uses: ``params`` less the routed experts it skips in each MoE layer
        (the multi-token prediction modules' included)."""
        if self.moe is None:
            return self.params
        return self.params - (self.moe_layers + self.mtp_layers) * moe_mlp.inactive_params(
            self.moe, self.d_model, self.gated_mlp, self.bias)

    # ---- blocks ---------------------------------------------------------------------------------
    def _block_flops_fwd(self, kind: BlockKind, stack: str, moe_layer: bool = False, windowed: bool = False) -> float:
        d, a, kv = self.d_model, self.inner, self.kv_inner
        s = self.seq_len
        if kind == "ffn" and moe_layer:  # router + top_k experts + shared experts (optmap.workload.moe)
            return moe_mlp.layer_flops_fwd(self.moe, s, d, self.gated_mlp)
        if kind == "ffn":
            return 2.0 * s * d * (self.mlp_in + self.d_ff)  # Eq. 2: two GEMMs (the first gate+up if gated)
        if kind == "self_attn" and self.mla is not None:  # optmap.workload.mla
            return latent.attention_flops_fwd(self.mla, s, d, self.heads, self.head_dim)
        if kind == "self_attn":
            proj = 2.0 * s * d * (a + 2 * kv) + 2.0 * s * a * d  # QKV + output projection
            return proj + 2 * 2.0 * s * swa.keys(s, self.sliding_window, windowed) * a  # Eq. 1: Q·K^T, softmax(.)·V
        m = self.src_len
        proj = 2.0 * s * d * a + 2.0 * m * d * 2 * kv + 2.0 * s * a * d  # Q, K/V of memory, output
        return proj + 2 * 2.0 * s * m * a  # Eq. 1 with keys from the encoder

    def blocks(self) -> tuple[Block, ...]:
        """The forward chain of Megatron blocks (made once per config: a planner asks several times)."""
        return self._blocks

    @cached_property
    def _blocks(self) -> tuple[Block, ...]:
        out: list[Block] = []
        d = self.d_model
        for stack, n, kinds in self._stacks():
            for layer in range(n):
                mask_src = len(out)  # the layer's self_attn drives its token mask (note D10)
                moe_layer = self.is_moe_layer(layer)
                for kind in kinds:
                    f = self._block_flops_fwd(kind, stack, moe_layer, self.is_windowed_layer(layer))
                    extra = self.src_len * d if (kind == "cross_attn" and self.cross_kv_grad) else 0
                    out.append(Block(index=len(out), layer=layer, stack=stack, kind=kind,
                                     tokens=self.seq_len, flops_fwd=f, flops_bwd=self.bwd_factor * f,
                                     msg_fwd=self.seq_len * d, msg_bwd=self.seq_len * d + extra,
                                     mask_source=mask_src, params=self._block_params(kind, moe_layer)))
        return tuple(out)

    def arrays(self) -> BlockArrays:
        bl = self.blocks()
        return BlockArrays(
            names=tuple(b.name for b in bl),
            tokens=np.array([b.tokens for b in bl], dtype=np.float64),
            flops_fwd=np.array([b.flops_fwd for b in bl]),
            flops_bwd=np.array([b.flops_bwd for b in bl]),
            msg_fwd=np.array([b.msg_fwd for b in bl], dtype=np.float64),
            msg_bwd=np.array([b.msg_bwd for b in bl], dtype=np.float64),
            computes_mask=np.array([b.computes_mask for b in bl], dtype=bool),
        )

    @property
    def n_blocks(self) -> int:
        return sum(n * len(kinds) for _, n, kinds in self._stacks())

    def head_flops_fwd(self) -> float:
        """Output projection to the vocabulary, per sample (0 when ``lm_head`` is False)."""
        return 2.0 * self.seq_len * self.d_model * self.vocab if self.lm_head else 0.0

    def mtp_flops_fwd(self) -> float:
        """Forward FLOPs per sample of the multi-token prediction modules: each its projection, its
        layer (as the last layer's) and the shared output head once more (DeepSeek-V3 §2.2)."""
        if not self.mtp_layers:
            return 0.0
        s, d, last = self.seq_len, self.d_model, self.layers - 1
        layer = (self._block_flops_fwd("self_attn", "dec", windowed=self.is_windowed_layer(last))
                 + self._block_flops_fwd("ffn", "dec", self.is_moe_layer(last)))
        return self.mtp_layers * (2.0 * s * 2 * d * d + layer + self.head_flops_fwd())

    def flops_fwd(self) -> float:
        """Whole-model forward FLOPs per sample (blocks + output head + multi-token prediction)."""
        return float(sum(b.flops_fwd for b in self.blocks())) + self.head_flops_fwd() + self.mtp_flops_fwd()

    def with_(self, **changes) -> "TransformerConfig":
        return dataclasses.replace(self, **changes)


def megatron_gpt(name: str, layers: int, d: int, heads: int, seq_len: int = 2048) -> TransformerConfig:
    """A GPT model as the Megatron-LM papers build it (Narayanan et al. SC'21 §5.1; Korthikanti et
    al. 2022 Table 3): 51,200-token vocabulary (the GPT-2 BPE padded), learned positions over the
    2,048-token sequence, biases, pre-LN with a final norm, output tied to the embedding, d_ff = 4h.
    Parameters = Narayanan Eq. 2, 12lh²(1 + 13/(12h) + (V + s)/(12lh)), plus the final norm's 2h."""
    return TransformerConfig(name=name, kind="decoder-only", layers=layers, d_model=d, heads=heads,
                             head_dim=d // heads, d_ff=4 * d, seq_len=seq_len, vocab=51200,
                             max_positions=seq_len, final_norm=True, dropout=0.1)  # Megatron-LM's default


@dataclass(frozen=True, eq=False)
class TransformerWorkload(Workload):
    """A Workload that also carries its :class:`TransformerConfig` (the Megatron block chain)."""

    config: TransformerConfig | None = None


def sizes_of(workload: Workload, planner: str) -> TransformerConfig:
    """``workload``'s transformer sizes, or one line saying ``planner`` (e.g. "the acctfm cost model plans
    Megatron blocks of a transformer") needs a transformer workload rather than a layer graph."""
    if not isinstance(workload, TransformerWorkload) or workload.config is None:
        raise OptmapError(f"{planner}; use [workload] model = \"transformer\" with the model's preset or layers, "
                          f"d_model, heads, d_ff, seq_len, vocab (workload '{workload.name}' is a layer graph: an "
                          f"imported ONNX model has no sizes to plan by)")
    return workload.config
