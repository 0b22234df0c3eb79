"""Recurrent and attention op kinds for the workload IR: ``lstm`` and ``attention``.

Shapes are per sample and features-last: a sequence is ``(T, F)``.

* ``lstm`` (attributes ``bidirectional``): input ``(T, H_in)``, output ``(T, H x directions)``.
  Each step multiplies the 4 gate matrices with the step's input and the previous step's output
  (Hochreiter & Schmidhuber 1997; the DSM paper §II-A: "the number of input features in LSTMs is
  effectively N_in + N_out"), so a direction holds 4H x (H_in + H) weights and one step of one
  sample is 4H x (H_in + H) MACs: 16.78 MFLOP for H_in = H = 1024 (DSM §IV "~16M FLOPs/layer").
  Parameters count PyTorch's two bias vectors (8H per direction); bias FLOPs are neglected as for
  every contraction.
* ``attention``: inputs ``query (T_q, H)`` and ``source (T_s, H)``; for every query step a dot
  product with every source step, a softmax, and the weighted sum of the source steps (Luong et
  al. 2015 dot attention; GNMT uses an additive score with the same two products per pair,
  Wu et al. 2016 §3); output ``(T_q, 2H)``, the query and its context side by side. No weights:
  like ``matmul``, backward_data is twice the forward and there is no weight gradient.
"""

from __future__ import annotations

from optmap.workload import LayerFlops, OpKind


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


class Attention(OpKind):
    """Each query step against every source step: scores, softmax, context; outputs query and context side by side."""

    name, weighted, channels_first = "attention", True, False

    def macs(self, layer) -> int:
        (steps, hidden), (source, _) = layer.in_shapes[0], layer.in_shapes[1]
        return 2 * steps * source * hidden  # scores q·k and context Σ a·v

    def flops(self, layer, batch: int) -> LayerFlops:
        forward = 2 * self.macs(layer) * batch
        return LayerFlops(forward, 2 * forward, 0)  # gradients w.r.t. both operands, no weights


OPS = (LSTM(), Attention())
