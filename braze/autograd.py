"""PyTorch's ``torch.autograd`` spelling of braze's reverse mode: :func:`grad` and
:func:`backward`, to any order with ``create_graph=True``."""

from __future__ import annotations

from collections.abc import Sequence

from braze.autodiff import backward as _backward
from braze.autodiff import gradients
from braze.tensor import Tensor


def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool = False,
) -> tuple[Tensor | None, ...]:
    """The gradients of ``outputs`` with respect to ``inputs``, as ``torch.autograd.grad``:
    one per input (a tuple), each the sum over the outputs of their gradients weighted by
    ``grad_outputs`` (ones for a scalar output). Inputs may be leaves or computed tensors
    that require grad; ``.grad`` is left alone. With ``create_graph`` the gradients are
    differentiable (a gradient penalty, a Hessian-vector product); the graph's saved values
    are kept unless ``retain_graph`` is False. An input the outputs do not depend on is an
    error, or None with ``allow_unused``."""
    return gradients(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused)


def backward(
    tensors: Tensor | Sequence[Tensor],
    grad_tensors: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Sequence[Tensor] | None = None,
) -> None:
    """Accumulate the gradients of ``tensors`` (each weighted by its entry of
    ``grad_tensors``) into ``.grad`` of the leaves (of ``inputs``, when given), as
    ``torch.autograd.backward``: one backward pass for all of them."""
    _backward(tensors, grad_tensors, retain_graph, create_graph, inputs)
