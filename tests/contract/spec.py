"""What a registry entry says (tests/contract/registry.py): how to call one public name on small inputs,
and which properties of the contract apply to it. Read by tests/contract/test_contract.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

F64, F32, BF16 = torch.float64, torch.float32, torch.bfloat16
ALL = (F64, F32, BF16)


@dataclass(frozen=True)
class Edge:
    """One edge input: ``call(inputs)`` either returns (then every float tensor it returns is finite and
    ``check(out)``, if given, holds) or raises ``raises`` with a message matching ``match``."""
    label: str
    call: Callable
    raises: type | tuple | None = None
    match: str = ""
    check: Callable | None = None


@dataclass(frozen=True)
class Entry:
    """One public name. ``call(inputs)`` builds small inputs with ``inputs`` (tests/contract/inputs.py) and
    returns the output. ``call=None``: the name makes no tensors from a tensor input (arithmetic on Python
    numbers, text, a dataclass); ``why`` says so and only its ``edges`` run.

    - ``meta``: True, or why the entry cannot run on the meta device (it stops on values);
    - ``dtypes``: the dtypes the algorithm allows; ``why_dtypes`` says why one is missing;
    - ``out_dtype(dtype, i)``: the dtype the i-th float tensor of the output has for input ``dtype``
      (default: the input's), as the docstring says;
    - ``batch``: dim 0 of the inputs is a batch and every tensor output follows it row for row
      (False: ``why_batch`` says why not);
    - ``accurate``: the bf16 output stays within ``accurate`` (relative to the output's largest magnitude) of
      the float64 output on the same bf16-rounded inputs, which catches a softmax statistic or an angle
      accumulated in bf16;
    - ``edges``: fully masked rows, zero gates, empty sequences, length 1, each documented range's edge.
    """
    name: str
    call: Callable | None = None
    why: str = ""
    meta: Any = True
    dtypes: tuple = ALL
    why_dtypes: str = ""
    out_dtype: Callable | None = None
    batch: bool = True
    why_batch: str = ""
    accurate: float | None = None
    edges: tuple = field(default_factory=tuple)


def pure(name: str, why: str, *edges: Edge) -> Entry:
    """A name with no tensor made from a tensor input: only the edges run."""
    return Entry(name, None, why=why, edges=tuple(edges))
