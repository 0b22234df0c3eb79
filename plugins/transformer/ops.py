"""Operation kinds the transformer workload adds to the IR: ``mul``, the element-wise product.

A gated MLP (SwiGLU, Shazeer 2020: ``act(x·W1) ⊙ x·W3``) joins its two branches by an
element-wise product. Work: one multiplication per output element forward; backward, each
operand's gradient is the output gradient times the other operand (one multiplication per element
per operand). No parameters.
"""

from __future__ import annotations

from optmap.workload import LayerFlops, OpKind


class Mul(OpKind):
    """Element-wise product of two or more tensors of one shape."""

    name, merge = "mul", True

    def forward_per_sample(self, layer) -> int:
        return (len(layer.in_shapes) - 1) * layer.out_elements  # one multiplication per extra operand

    def flops(self, layer, batch: int) -> LayerFlops:
        forward = self.forward_per_sample(layer) * batch
        # d(a⊙b)/da = g⊙b, d/db = g⊙a: (operands - 1) products for each operand's gradient
        return LayerFlops(forward, len(layer.in_shapes) * forward, 0)


MUL = Mul()
