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


# --- arguments (tests/contract/arguments.py) ---------------------------------------------------------------
@dataclass(frozen=True)
class To:
    """Honoured: the call with this parameter set to ``value`` (or ``make(inputs)``, drawn after the baseline's
    arguments) gives a different output than the baseline call."""
    value: Any = None
    make: Callable | None = None


@dataclass(frozen=True)
class Refuses:
    """Refused: the call with this parameter set to ``value`` (or ``make(inputs)``) raises ``raises`` whose message
    names the parameter."""
    value: Any = None
    make: Callable | None = None
    raises: type | tuple = ValueError


@dataclass(frozen=True)
class Holds:
    """Honoured, shown by a property the output alone cannot show (a check switched off, dropout in training,
    a recorded trace, a cheaper path to the same output): ``check(inputs)`` is true."""
    check: Callable
    why: str


@dataclass(frozen=True)
class Elsewhere:
    """Covered by an existing test, named by its node id ``tests/…/test_x.py::test_name``."""
    node: str


@dataclass(frozen=True)
class Data:
    """A required input whose every value enters the output by construction (q, k, v, x…): no test here."""
    why: str


@dataclass(frozen=True)
class Args:
    """The arguments of one public callable: ``target`` is ``module.function`` or ``module.Class.method``
    (``__init__``, ``forward``, ``__call__`` or a public method). ``kwargs(inputs)`` gives the baseline call's
    arguments by name. For ``__init__``, ``use(inputs, instance)`` turns the instance into an output; for other
    methods, ``obj(inputs)`` builds the instance. ``out(kwargs, result)``, if given, is the output (an in-place
    function: the arguments it updated). ``rows`` maps each parameter to one kind, or a tuple of kinds
    (a loop bound: honoured, and the value that would not terminate refused)."""
    target: str
    kwargs: Callable
    rows: dict
    obj: Callable | None = None
    use: Callable | None = None
    out: Callable | None = None


def args(target: str, kwargs: Callable, /, obj=None, use=None, out=None, **rows) -> Args:
    return Args(target, kwargs, rows, obj, use, out)


def data(names: str, why: str) -> dict:
    """``**data("q k v", "why")``: the rows of the plain-data parameters, with their one reason."""
    return {name: Data(why) for name in names.split()}
