"""GNMT (Wu et al. 2016, "Google's Neural Machine Translation System"), as the DSM paper evaluates it (§IV).

8 encoder and 8 decoder LSTM layers of ``hidden`` units over ``timesteps`` steps, residual
connections from the third layer up (Wu et al. §3.1), attention from the bottom decoder layer over
the top encoder layer (§3), its context fed with the query to the next decoder layer, and an
output projection to the vocabulary with a softmax. Open points of the DSM paper, decided here
(DSM note §6.1, §7.14):

* ``bidirectional = "encoder"``: the first encoder layer is bidirectional, as in GNMT; the DSM
  paper writes "the first decoder" (``"decoder"`` builds that, ``"none"`` neither).
* Source and target both have ``timesteps`` steps (the paper gives one number, 128).
* Attention is the IR's scaled dot-product kind with one head (GNMT's additive score has the same
  two products per step pair); the next decoder layer reads the query and its context side by side.
* The model starts from embedded tokens (embedding lookups are gathers the paper does not
  discuss); ``vocab`` = 32,000 wordpieces (Wu et al. §4) for the projection, 0 to leave it out.
"""

from __future__ import annotations

from typing import Literal

from optmap.bounds import MAX_DIMENSION, Batch, Depth, Dimension, ints
from optmap.errors import OptmapError
from optmap.workload import Workload, WorkloadBuilder

from optmap.workload.general_ops import Attention

from .recurrent import LSTM


def gnmt(*, batch: Batch, dtype: str = "fp32", phase: str = "training", hidden: Dimension = 1024, layers: Depth = 8,
         timesteps: Dimension = 128, vocab: ints(0, MAX_DIMENSION) = 32000,
         bidirectional: Literal["encoder", "decoder", "none"] = "encoder") -> Workload:
    """GNMT: 8+8 LSTM layers of 1024 over 128 steps, residuals, attention, vocabulary projection (Wu et al. 2016)."""
    if layers < 2:
        raise OptmapError(f"gnmt: layers must be at least 2 (the decoder's second layer reads the attention), got {layers}")
    b = WorkloadBuilder("gnmt", (timesteps, hidden), input_name="source")
    lstm, attention = LSTM(), Attention()

    def layer(x: str, name: str, bidir: bool, residual: bool) -> str:
        y = b.op(lstm, x, (timesteps, hidden * (2 if bidir else 1)), name=name, bidirectional=bidir)
        return b.add(y, x, name=f"{name}.residual") if residual and b.shape(x) == b.shape(y) else y

    x = "source"
    for i in range(1, layers + 1):  # residual connections from the third layer up (Wu et al. §3.1)
        x = layer(x, f"enc{i}", bidirectional == "encoder" and i == 1, i >= 3)
    encoded = x
    query = layer(b.input((timesteps, hidden), "target"), "dec1", bidirectional == "decoder", False)
    width = b.shape(encoded)[-1]  # one head over the encoder's outputs (keys and values)
    context = b.op(attention, (query, encoded), (timesteps, width), name="attention", heads=1, q_len=timesteps,
                   kv_len=timesteps, head_dim=width, v_head_dim=width)
    x = b.concat(query, context, axis=1, name="attention.concat")  # the next layer reads both (Wu et al. §3)
    for i in range(2, layers + 1):
        x = layer(x, f"dec{i}", False, i >= 3)
    if vocab:
        x = b.activation(b.linear(x, vocab, name="projection"), "softmax", name="softmax")
    return b.build(batch, dtype, phase)
