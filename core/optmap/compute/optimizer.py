"""The optimizers whose weight updates the step model prices (:mod:`optmap.compute.step`), as a
plugin option type: in a module of its own, so that a plugin naming it in its signature loads
nothing else (the step model, about 6 ms of start-up, loads when a measured accelerator needs it)."""

from typing import Literal

Optimizer = Literal["sgd", "momentum", "adam"]
