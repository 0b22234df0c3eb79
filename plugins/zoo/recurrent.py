"""The recurrent op kind of the workload IR: ``lstm`` (attention is the IR's ``attention`` kind, :mod:`optmap.workload.general_ops`).

Shapes are per sample and features-last: a sequence is ``(T, F)``.

* ``lstm`` (attributes ``bidirectional``): input ``(T, H_in)``, output ``(T, H x directions)``.
  Each step multiplies the 4 gate matrices with the step's input and the previous step's output
  (Hochreiter & Schmidhuber 1997; the DSM paper §II-A: "the number of input features in LSTMs is
  effectively N_in + N_out"), so a direction holds 4H x (H_in + H) weights and one step of one
  sample is 4H x (H_in + H) MACs: 16.78 MFLOP for H_in = H = 1024 (DSM §IV "~16M FLOPs/layer").
  Parameters count PyTorch's two bias vectors (8H per direction); bias FLOPs are neglected as for
  every contraction.
* ``attention`` (GNMT's, from the query of the decoder's first layer over the encoder's outputs) is
  the fused scaled dot-product kind the ONNX plugin registers (attributes heads, q_len, kv_len,
  head_dim, v_head_dim): one kind per name in the IR.
"""

from __future__ import annotations

from optmap.workload import OpKind


class LSTM(OpKind):
    """Long short-term memory over T timesteps (attributes: bidirectional)."""

    name, weighted, channels_first = "lstm", True, False

    @staticmethod
    def directions(layer) -> int:
        return 2 if layer.attr("bidirectional", False) else 1

    def hidden(self, layer) -> int:
        return layer.out_shape[-1] // self.directions(layer)

    def weight_elements(self, layer) -> int:
        hidden = self.hidden(layer)
        return self.directions(layer) * 4 * hidden * (layer.in_shapes[0][-1] + hidden)

    def params(self, layer) -> int:
        return self.weight_elements(layer) + self.directions(layer) * 8 * self.hidden(layer)

    def macs(self, layer) -> int:
        return layer.in_shapes[0][0] * self.weight_elements(layer)  # every timestep, per sample


OPS = (LSTM(),)
