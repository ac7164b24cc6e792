"""The contract every public function and class of the reader code meets (CONVENTIONS.md, "Contract").

One parametrised suite over the registry (tests/contract/registry.py): each public name of a reader module
has one entry saying how to build small inputs and which properties apply.

- device: every tensor made inside follows the input's device. Each entry runs on PyTorch's ``meta`` device
  (shapes only: a tensor made on the CPU inside fails there), with the value-reading input checks switched
  off by ``snippets.checks.values_unchecked()``; under ``pytest --device cuda`` also on CUDA, values compared
  with the CPU's;
- dtype: float64, float32 and bfloat16 where the algorithm allows, the output keeping the input's dtype (or the
  one the docstring names); where an entry says ``accurate``, bf16 stays near float64 (fp32 accumulation);
- batch: a batch of 2 gives, row for row, what batch 1 gives;
- edges: fully masked rows, zero gates, empty sequences, length 1, the edge of each documented range:
  a defined, finite result or a clear error.

Which names are public: not starting with ``_``, defined (not imported) in ``snippets/<module>.py``, for
every reader module but ``snippets/results.py`` (results I/O, tested in tests/site/); ``snippets/probes/``,
``snippets/experiments/`` and ``snippets/data/`` (a script and corpora) are not reader modules.
``snippets/stats.py`` (statistics the reader reuses) and ``snippets/checks.py`` are.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import pkgutil

import pytest
import torch

import snippets
from snippets.checks import values_unchecked
from tests.contract.inputs import FULL, Inputs
from tests.contract.registry import REGISTRY
from tests.contract.spec import BF16, F64

NOT_READER = {"results"}  # snippets/results.py: results I/O (tests/site/test_results*.py)


def public_names() -> set[str]:
    names = set()
    for info in pkgutil.iter_modules(snippets.__path__):
        if info.ispkg or info.name in NOT_READER:
            continue
        module = importlib.import_module(f"snippets.{info.name}")
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj) or inspect.isclass(obj):
                names.add(f"{info.name}.{name}")
    return names


ENTRIES = {e.name: e for e in REGISTRY}
TENSOR = [e for e in REGISTRY if e.call is not None]


def test_registry_lists_every_public_name_once():
    """A new public function or class of snippets/ fails here until it has a registry entry."""
    names = [e.name for e in REGISTRY]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    public = public_names()
    assert sorted(public - set(names)) == [], "public names without a registry entry (tests/contract/registry.py)"
    assert sorted(set(names) - public) == [], "registry entries for names that are not public"


def test_registry_entries_say_why():
    for e in REGISTRY:
        assert e.call is not None or e.why, f"{e.name}: a name without a tensor call says why"
        assert e.meta is True or (isinstance(e.meta, str) and e.meta), e.name
        assert len(e.dtypes) == 3 or e.why_dtypes, f"{e.name}: say why a dtype is left out"
        assert e.batch or e.why_batch, f"{e.name}: say why there is no batch"


# --- helpers -------------------------------------------------------------------------------------------
def tensors(out):
    """Every tensor an output holds, in a fixed order (tuples, lists, dicts, dataclasses)."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in tensors(o)]
    if isinstance(out, dict):
        return [t for k in out for t in tensors(out[k])]
    if dataclasses.is_dataclass(out) and not isinstance(out, type):
        return [t for f in dataclasses.fields(out) for t in tensors(getattr(out, f.name))]
    return []


def run(entry, device="cpu", dtype=F64, row=None):
    with torch.no_grad():
        return entry.call(Inputs(device, dtype, row))


def ids(entry):
    return entry.name


# --- device ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("entry", [e for e in TENSOR if e.meta is True], ids=ids)
def test_meta_device(entry):
    """On the meta device every tensor the call returns is on meta: nothing was made on the CPU inside."""
    with values_unchecked():
        out = run(entry, "meta")
    got = tensors(out)
    assert got, f"{entry.name} returned no tensor"
    assert [t.device.type for t in got] == ["meta"] * len(got)


def test_meta_exemptions_say_why():
    """Entries that cannot run on meta stop on values; they still run on --device cuda."""
    exempt = {e.name: e.meta for e in TENSOR if e.meta is not True}
    assert all(isinstance(w, str) and len(w) > 10 for w in exempt.values()), exempt


@pytest.mark.parametrize("entry", TENSOR, ids=ids)
def test_device_option(entry, device):
    """Under ``pytest --device cuda`` the call runs there: outputs on that device, values the CPU's."""
    if device.type == "cpu":
        pytest.skip("--device cpu: the CPU runs every other test of this suite")
    if device.type == "meta":
        if entry.meta is not True:
            pytest.skip(f"not on meta: {entry.meta}")
        with values_unchecked():
            got = tensors(run(entry, device))
        assert [t.device.type for t in got] == ["meta"] * len(got)
        return
    out = [t.cpu() for t in tensors(run(entry, device))]
    ref = tensors(run(entry, "cpu"))
    assert [t.shape for t in out] == [t.shape for t in ref]
    for a, b in zip(out, ref):
        if a.is_floating_point():
            torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-8)
        else:
            assert torch.equal(a, b)


# --- dtype ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("entry,dtype", [(e, d) for e in TENSOR for d in e.dtypes],
                         ids=[f"{e.name}-{str(d)[6:]}" for e in TENSOR for d in e.dtypes])
def test_dtype(entry, dtype):
    """The float outputs keep the input's dtype (or the docstring's), and are finite."""
    out = [t for t in tensors(run(entry, "cpu", dtype)) if t.is_floating_point()]
    want = [entry.out_dtype(dtype, i) if entry.out_dtype else dtype for i in range(len(out))]
    assert [t.dtype for t in out] == want
    assert all(bool(torch.isfinite(t).all()) for t in out), f"{entry.name}: NaN or inf in the {dtype} output"


@pytest.mark.parametrize("entry", [e for e in TENSOR if e.accurate], ids=ids)
def test_bf16_accumulates_in_fp32(entry):
    """bf16 inputs give the float64 result on the same (bf16-rounded) inputs, to ``accurate``: the softmax
    statistics, the online softmax and the RoPE angles are accumulated in fp32 or wider."""
    low = tensors(run(entry, "cpu", BF16))
    ref = tensors(entry.call(_Rounded("cpu", F64)))
    for a, b in zip(low, ref):
        if a.is_floating_point():
            scale = max(float(b.abs().max()), 1e-30)
            err = float((a.double() - b.double()).abs().max())
            assert err <= entry.accurate * scale, f"{entry.name}: bf16 off by {err:.3g} (scale {scale:.3g})"


class _Rounded(Inputs):
    """Inputs in float64 that hold exactly the bf16 values (the same draws rounded to bf16)."""

    def _place(self, t, dtype=None):
        if t.is_floating_point():
            t = t.to(BF16)
        return super()._place(t, dtype)

    def module(self, factory):
        m = super().module(factory)
        with torch.no_grad():
            for p in list(m.parameters()) + list(m.buffers()):
                if p.is_floating_point():
                    p.copy_(p.to(BF16).to(p.dtype))
        return m


# --- batch ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("entry", [e for e in TENSOR if e.batch], ids=ids)
def test_batch_rows(entry):
    """A batch of 2 gives, row for row, what batch 1 gives (float64: only the summation order differs)."""
    full = tensors(run(entry))
    rows = [tensors(run(entry, row=r)) for r in range(FULL)]
    assert full, entry.name
    for i, t in enumerate(full):
        assert t.shape[0] == FULL, f"{entry.name}: output {i} has shape {tuple(t.shape)}, no batch dim first"
        for r in range(FULL):
            one = rows[r][i]
            assert one.shape == (1,) + t.shape[1:], (entry.name, i, r)
            if t.is_floating_point():
                torch.testing.assert_close(t[r:r + 1], one, rtol=1e-9, atol=1e-12)
            else:
                assert torch.equal(t[r:r + 1], one), (entry.name, i, r)


# --- edges ----------------------------------------------------------------------------------------------
EDGES = [(e, edge) for e in REGISTRY for edge in e.edges]


@pytest.mark.parametrize("entry,edge", EDGES, ids=[f"{e.name}-{edge.label}" for e, edge in EDGES])
def test_edge(entry, edge):
    inputs = Inputs()
    if edge.raises:
        with pytest.raises(edge.raises, match=edge.match):
            edge.call(inputs)
        return
    out = edge.call(inputs)
    for t in tensors(out):
        if t.is_floating_point():
            assert bool(torch.isfinite(t).all()), f"{entry.name} {edge.label}: NaN or inf"
    if isinstance(out, float):
        assert math.isfinite(out), f"{entry.name} {edge.label}: {out}"
    if edge.check is not None:
        assert edge.check(out), f"{entry.name} {edge.label}: check failed on {out!r}"
