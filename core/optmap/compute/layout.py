"""cuDNN's layout transforms when a network's activations are NCHW (PyTorch's default memory format).

Tensor cores run convolutions on NHWC tensors. Given NCHW tensors (``torch.contiguous_format``,
how torchvision builds its models), cuDNN transposes the operands a tensor-core convolution
kernel reads into NHWC in kernels of their own (``nchwToNhwcKernel``) and writes the kernel's
output in the caller's layout from its epilogue (the ``..._nhwckrsc_nchw`` kernels). Sources:
the cuDNN Developer Guide, Legacy API, "Data and Filter Formats" ("the cuDNN library may use
padding, folding, and NCHW-to-NHWC transformations to call the Tensor Core operations", detailed
under "Tensor Transformations"), and NVIDIA's "Convolutional Layers User's Guide", section
"Tensor Layouts In Memory: NCHW vs NHWC". A model converted with
``model.to(memory_format=torch.channels_last)`` runs the NHWC kernels directly; the H100
measurements were taken that way, so the calibration prices the kernels and this module adds the
transforms.

Per convolution pass on a shard of X input, Y output and W weight elements (each transform reads
and writes its tensor once, 2 x elements x bytes, one kernel per operand):

============== =========================== =======
pass           transposed operands          kernels
============== =========================== =======
forward        x (X), weights (W)           2
backward_data  dy (Y), weights (W)          2
weight_grad    x (X), dy (Y)                2
============== =========================== =======

The transforms feed tensor-core kernels only: a layer whose channels miss the alignment (the
3-channel first convolution) keeps its measured price (channels-last; cuDNN may pad it instead,
which no measurement here times), and a linear layer runs cuBLAS on row-major matrices, so
neither transposes anything. The transforms are launched inside the
cuDNN call, so they cost device time and launches but no framework dispatch on the host.

The option type lives here, apart from the step model, so a plugin naming it in its signature
loads nothing else (as :mod:`optmap.compute.optimizer`).
"""

from typing import Literal, get_args

MemoryFormat = Literal["contiguous", "channels_last"]
MEMORY_FORMATS = get_args(MemoryFormat)
TRANSFORM_KERNELS = 2  # operands transposed per convolution pass (module docstring table)


def transposed_elements(inputs, outputs, weights) -> dict:
    """Elements each convolution pass transposes from NCHW to NHWC (module docstring table)."""
    return {"forward": inputs + weights, "backward_data": outputs + weights, "weight_grad": inputs + outputs}
