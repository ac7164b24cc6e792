"""Every argument a public callable of the reader code accepts is honoured or refused, never silently ignored
(CONVENTIONS.md, "Contract"); every loop driven by an argument terminates.

The table is tests/contract/arguments.py: one row per (public callable, parameter), the kinds in
tests/contract/spec.py. A new parameter fails ``test_every_parameter_has_a_row`` until it has a row.

- honoured (``To``): changing the value changes the output (tensors beyond float64 rounding);
- honoured (``Holds``): a property shows it (a check switched off, dropout in training, a trace recorded);
- refused (``Refuses``): a value outside the accepted range raises an error whose message names the parameter;
- covered elsewhere (``Elsewhere``): the named test exists;
- plain data (``Data``): a required input whose every value enters the output, with its reason.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import re

import pytest
import torch
from torch import nn

from tests.contract.arguments import ARGUMENTS
from tests.contract.inputs import Inputs
from tests.contract.spec import Data, Elsewhere, Holds, Refuses, To
from tests.contract.test_contract import public_names
from tests.support.build import ROOT

METHODS = ("__init__", "__call__")  # dunder methods with rows; every other public method with parameters has rows


def callables() -> dict[str, list[str]]:
    """``module.function`` or ``module.Class.method`` → its parameter names (``self`` left out)."""
    out = {}
    for public in sorted(public_names()):
        module, name = public.split(".")
        obj = getattr(importlib.import_module(f"snippets.{module}"), name)
        if inspect.isfunction(obj):
            out[public] = list(inspect.signature(obj).parameters)
            continue
        for meth, fn in vars(obj).items():
            if not inspect.isfunction(fn) or (meth.startswith("_") and meth not in METHODS):
                continue
            params = [p for p in inspect.signature(fn).parameters if p != "self"]
            if params:
                out[f"{public}.{meth}"] = params
    return out


ENTRIES = {e.target: e for e in ARGUMENTS}


def _kinds(row):
    return row if isinstance(row, tuple) else (row,)


ROWS = [(e, p, k) for e in ARGUMENTS for p, row in e.rows.items() for k in _kinds(row)]


def test_every_parameter_has_a_row():
    """A new parameter of a public callable fails here until tests/contract/arguments.py has its row."""
    targets = [e.target for e in ARGUMENTS]
    assert len(targets) == len(set(targets)), sorted(t for t in targets if targets.count(t) > 1)
    missing = [f"{t}({p})" for t, params in callables().items() for p in params
               if t not in ENTRIES or p not in ENTRIES[t].rows]
    assert missing == [], "parameters without a row in tests/contract/arguments.py"


def test_rows_name_only_existing_parameters():
    have = callables()
    extra = [f"{e.target}({p})" for e in ARGUMENTS for p in e.rows if p not in have.get(e.target, ())]
    assert extra == [], "rows for parameters (or callables) that do not exist"


def test_rows_are_kinds():
    for e, p, k in ROWS:
        assert isinstance(k, (To, Refuses, Holds, Elsewhere, Data)), (e.target, p, k)
        if isinstance(k, (Data, Holds)):
            why = k.why
            assert isinstance(why, str) and len(why) > 10, (e.target, p)
        kinds = _kinds(e.rows[p])
        assert not (any(isinstance(x, Data) for x in kinds) and len(kinds) > 1), (e.target, p)


# --- calling a target ---------------------------------------------------------------------------------------
def _resolve(target):
    module, name, *meth = target.split(".")
    return getattr(importlib.import_module(f"snippets.{module}"), name), (meth[0] if meth else None)


def call(entry, inputs, **override):
    """The target called with the baseline arguments, ``override`` replacing some (each value already built)."""
    obj, meth = _resolve(entry.target)
    with torch.no_grad():
        kw = {**entry.kwargs(inputs), **{p: v(inputs) if callable(v) and getattr(v, "_make", False) else v
                                         for p, v in override.items()}}
        if meth is None:
            result = obj(**kw)
            return result if entry.out is None else entry.out(kw, result)
        if meth == "__init__":
            inst = inputs.module(lambda: obj(**kw)) if issubclass(obj, nn.Module) else obj(**kw)
            return entry.use(inputs, inst)
        inst = entry.obj(inputs)
        return inst(**kw) if meth in ("forward", "__call__") else getattr(inst, meth)(**kw)


_BASELINES = {}


def baseline(entry):
    """The baseline call's output, once per target (the inputs are seeded: every call gives the same)."""
    if entry.target not in _BASELINES:
        _BASELINES[entry.target] = call(entry, Inputs())
    return _BASELINES[entry.target]


def _value(kind):
    """The override for a To / Refuses row: a constant, or ``make`` marked to be built from the inputs."""
    if kind.make is None:
        return kind.value
    make = kind.make

    def built(inputs):
        return make(inputs)
    built._make = True
    return built


def differ(a, b) -> bool:
    """Outputs differ: type, shape, dtype, device, or values (floats beyond float64 rounding)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return True
        if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
            return True
        if a.device.type == "meta":
            return False
        if a.is_floating_point():
            return not torch.allclose(a.double(), b.double(), rtol=1e-9, atol=1e-12)
        return not torch.equal(a, b)
    if type(a) is not type(b):
        return True
    if isinstance(a, (list, tuple)):
        return len(a) != len(b) or any(differ(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() != b.keys() or any(differ(a[k], b[k]) for k in a)
    if dataclasses.is_dataclass(a):
        return differ(dataclasses.astuple(a), dataclasses.astuple(b))
    if isinstance(a, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) != math.isnan(b)
        return not math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)
    return a != b


def _ids(rows):
    return [f"{e.target}-{p}-{type(k).__name__}" for e, p, k in rows]


HONOURED = [r for r in ROWS if isinstance(r[2], To)]
REFUSED = [r for r in ROWS if isinstance(r[2], Refuses)]
HOLDS = [r for r in ROWS if isinstance(r[2], Holds)]
ELSEWHERE = [r for r in ROWS if isinstance(r[2], Elsewhere)]


@pytest.mark.parametrize("entry,param,kind", HONOURED, ids=_ids(HONOURED))
def test_changed_argument_changes_the_output(entry, param, kind):
    base = baseline(entry)
    changed = call(entry, Inputs(), **{param: _value(kind)})
    assert differ(base, changed), f"{entry.target}: {param} changed, the output did not: silently ignored?"


@pytest.mark.parametrize("entry,param,kind", REFUSED, ids=_ids(REFUSED))
def test_bad_argument_is_refused_by_name(entry, param, kind):
    baseline(entry)  # the baseline itself runs
    with pytest.raises(kind.raises) as err:
        call(entry, Inputs(), **{param: _value(kind)})
    assert re.search(rf"\b{re.escape(param)}\b", str(err.value)), f"{entry.target}: the message does not name {param}"


@pytest.mark.parametrize("entry,param,kind", HOLDS, ids=_ids(HOLDS))
def test_argument_shown_by_its_property(entry, param, kind):
    with torch.no_grad():
        assert kind.check(Inputs()), f"{entry.target}: {param}: {kind.why}"


@pytest.mark.parametrize("entry,param,kind", ELSEWHERE, ids=_ids(ELSEWHERE))
def test_covering_test_exists(entry, param, kind):
    path, _, name = kind.node.partition("::")
    text = (ROOT / path).read_text(encoding="utf-8")
    assert re.search(rf"^\s*def {re.escape(name.split('[')[0])}\(", text, re.M), kind.node
