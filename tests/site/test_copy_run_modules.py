"""Each module's sections, copied out of the file, run by themselves in a fresh interpreter.

Pages show code from snippets/ by section. These tests take the marker lines
``# --8<-- [start:NAME]`` / ``# --8<-- [end:NAME]`` literally, as a reader's copy would,
and check (1) the exact section names chapter writers reference, (2) that all sections
concatenated in file order run in a fresh subprocess where ``snippets`` cannot be
imported, and (3) that each section runs with only the sections its module docstring
says it needs.
"""

import re
import textwrap

import pytest

from tests.support.copyrun import run_fresh, run_fresh_each
from tests.support.sections import ROOT, parse_sections

SECTIONS = {
    "attention": ["imports", "sdpa", "masks", "mha", "kv-cache", "restricted", "online-softmax", "checks"],
    "rnn": ["imports", "rnn-cell", "rnn-layer", "bptt-jacobian", "gradient-norms", "checks"],
    "lstm": ["imports", "lstm-cell", "lstm-layer", "cell-jacobian"],
}

# what each section needs besides `imports` (documented in each module's docstring); the
# sections of other modules a section needs are in PREFIX below
NEEDS = {
    "attention": {"sdpa": ["checks"], "masks": [], "mha": ["sdpa", "checks"], "kv-cache": [],
                  "restricted": ["checks"], "online-softmax": ["checks"], "checks": []},
    "rnn": {"rnn-cell": [], "rnn-layer": ["rnn-cell"], "bptt-jacobian": ["checks"],
            "gradient-norms": ["checks"], "checks": []},
    "lstm": {"lstm-cell": [], "lstm-layer": ["lstm-cell"], "cell-jacobian": ["lstm-cell"]},
}

# a tiny check per section ("module:section" where two modules share a section name); each
# uses only that section's names (plus torch)
SMOKE = {
    "sdpa": """
        q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
        out, w = scaled_dot_product_attention(q, k, v, torch.rand(3, 5) < 0.5)
        assert out.shape == (2, 3, 6) and not out.isnan().any()
    """,
    "masks": """
        assert (causal_mask(4) & padding_mask([2, 4], 4)).shape == (2, 4, 4)
    """,
    "mha": """
        x = torch.randn(2, 5, 8)
        out, w = MultiHeadAttention(8, 2)(x, x, x)
        assert out.shape == (2, 5, 8) and w.shape == (2, 2, 5, 5)
    """,
    "restricted": """
        x = torch.randn(2, 7, 4)
        out, w = restricted_attention(x, x, x, 2)
        assert out.shape == (2, 7, 4) and w.shape == (2, 7, 5)
    """,
    "online-softmax": """
        q, k, v = torch.randn(1, 9, 4), torch.randn(1, 7, 4), torch.randn(1, 7, 3)
        ref = torch.softmax(q @ k.transpose(-2, -1) / 2.0, dim=-1) @ v
        assert (online_softmax_attention(q, k, v, block=4) - ref).abs().max() < 1e-5
    """,
    "rnn-cell": """
        assert RNNCell(3, 4)(torch.randn(2, 3), torch.zeros(2, 4)).shape == (2, 4)
    """,
    "rnn-layer": """
        assert RNNLayer(3, 4)(torch.randn(2, 6, 3)).shape == (2, 6, 4)
    """,
    "bptt-jacobian": """
        hs, w = torch.rand(6, 4, dtype=torch.float64), torch.randn(4, 4, dtype=torch.float64)
        assert bptt_jacobian(hs, w, 1, 5).shape == (4, 4)
    """,
    "gradient-norms": """
        hs, w = torch.rand(6, 4, dtype=torch.float64), torch.randn(4, 4, dtype=torch.float64)
        assert gradient_norms(hs, w, 5).shape == (5,)
    """,
    "lstm-cell": """
        h, c = LSTMCell(3, 4, forget_bias=1.0)(torch.randn(2, 3), (torch.zeros(2, 4), torch.zeros(2, 4)))
        assert h.shape == c.shape == (2, 4)
    """,
    "lstm-layer": """
        hs, (h, c) = LSTMLayer(3, 4)(torch.randn(2, 6, 3))
        assert hs.shape == (2, 6, 4) and torch.equal(hs[:, -1], h)
    """,
    "cell-jacobian": """
        cell = LSTMCell(3, 4, forget_bias=5.0).double()
        direct, full = cell_state_jacobians(cell, torch.randn(8, 3, dtype=torch.float64),
                                            torch.zeros(4, dtype=torch.float64),
                                            torch.zeros(4, dtype=torch.float64), 5)
        assert direct.shape == full.shape == (4, 4)
    """,
    "attention:kv-cache": """
        cache = KVCache()
        cache.update(torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 3, 4))
        k, v = cache.update(torch.zeros(1, 2, 1, 4), torch.zeros(1, 2, 1, 4))
        assert k.shape == v.shape == (1, 2, 4, 4) and cache.length == 4 and cache.nbytes() == 2 * 32 * 4
    """,
    "attention:checks": """
        try:
            _check_qkv(torch.randn(2, 3, 4), torch.randn(2, 5, 8), torch.randn(2, 5, 6))
        except ValueError as error:
            assert "k (2, 5, 8)" in str(error)
        else:
            raise AssertionError("a d_k mismatch passed the check")
    """,
    "rnn:checks": """
        assert _check_hs(torch.rand(6, 4), torch.randn(4, 4)) == (6, 4)
    """,
    "checks:checks": """
        _check_tensor("x", torch.zeros(2, 3, 5), "(batch, n, d)", (None, None, 5))
        try:
            _check_tensor("w", torch.zeros(4, 3), "(d, d)", (4, 4))
        except ValueError as error:
            assert "w must have shape (d, d) = (4, 4), got w (4, 3)" in str(error)
        else:
            raise AssertionError("a (4, 3) matrix passed as (4, 4)")
    """,
    "llama:generate": """
        torch.manual_seed(0)
        model = LlamaDecoder(11, 16, 2, 4, 2, 24).eval()
        prompt = torch.randint(0, 11, (2, 5))
        with torch.no_grad():
            tokens = greedy_generate(model, prompt, 4)
            full = model(tokens[:, :-1])                              # no cache: every prefix at once
        assert tokens.shape == (2, 9) and torch.equal(full[:, 4:].argmax(-1), tokens[:, 5:])
    """,
    "decoding:greedy-decode": """
        torch.manual_seed(0)
        model = Transformer(7, 8, 2, 2, 16, dropout=0.0).eval()
        tokens, logits = greedy_decode(model, torch.randint(0, 7, (2, 5)), 4, bos_id=1, return_logits=True)
        assert tokens.shape == (2, 4) and logits.shape == (2, 4, 7)
    """,
}


def smoke(module, name):
    return textwrap.dedent(SMOKE.get(f"{module}:{name}", SMOKE.get(name, "")))


@pytest.mark.parametrize("module", SECTIONS)
def test_section_names_are_exact(module):
    sections = parse_sections(ROOT / "snippets" / f"{module}.py")
    assert [name for name, _ in sections] == SECTIONS[module]
    assert set(NEEDS[module]) | {"imports"} == set(SECTIONS[module])


# every reader module with sections (probes and experiments import freely: readers do not copy them)
MODULES = sorted(p.stem for p in (ROOT / "snippets").glob("*.py") if parse_sections(p))
# what a page must include besides a module's own sections (they use these names without importing them)
ATTENTION = ("attention", ["imports", "sdpa", "masks", "mha", "kv-cache", "checks"])
SINUSOID = ("positional", ["imports", "sinusoid"])  # transformer.py's PositionalEncoding uses it (chapter 07)
PREFIX = {
    "transformer": [ATTENTION, SINUSOID],
    "positional": [("checks", ["imports", "checks"]), ATTENTION],
    "decoding": [ATTENTION, SINUSOID, ("transformer", ["imports", "positional-encoding", "embedding", "ffn",
                                             "encoder-layer", "decoder-layer", "model", "kv-cache"])],
    # snippets/llama.py: assembled from chapters 02, 04, 05 and 07's parts (its docstring lists them)
    "llama": [ATTENTION, ("multihead", ["imports", "gqa"]), ("norms", ["imports", "rmsnorm", "checks"]),
              ("ffn", ["imports", "swiglu"]), ("checks", ["imports", "checks"]), ("positional", ["imports", "rope"]),
              ("transformer", ["imports", "embedding"])],
    "rnn": [("checks", ["imports", "checks"])],
    "lstm": [("checks", ["imports", "checks"])],
}


def prefix(module):
    return [dict(parse_sections(ROOT / "snippets" / f"{m}.py"))[name] for m, names in PREFIX.get(module, [])
            for name in names]


@pytest.mark.parametrize("module", MODULES)
def test_imports_section_holds_every_import(module):
    for name, code in parse_sections(ROOT / "snippets" / f"{module}.py"):
        imports = [line for line in code.splitlines() if re.match(r"\s*(import|from)\s+\w", line)]
        if name == "imports":
            assert imports and not any("snippets" in line for line in imports)
        else:
            assert not imports, f"section {name!r} imports: {imports}"


@pytest.mark.slow  # every section of every module, each in a fresh interpreter
def test_all_sections_in_file_order_run_by_themselves(tmp_path):
    """Each module's sections in file order (after what its pages include first), plus its smoke checks."""
    programs = {}
    for module in MODULES:
        sections = parse_sections(ROOT / "snippets" / f"{module}.py")
        checks = "\n".join(smoke(module, name) for name, _ in sections)
        programs[module] = "\n\n".join(prefix(module) + [code for _, code in sections]) + "\n\n" + checks
    run_fresh_each(programs, tmp_path)


@pytest.mark.slow  # every section of every module in a fresh interpreter
def test_each_section_runs_with_only_what_it_needs(tmp_path):
    """One interpreter, one fresh namespace per (module, section): other modules' needed sections +
    imports + needed sections + it."""
    checks = []
    for module, needs in NEEDS.items():
        code = dict(parse_sections(ROOT / "snippets" / f"{module}.py"))
        for name, deps in needs.items():
            program = "\n\n".join(prefix(module) + [code[s] for s in ["imports", *deps, name]]) + "\n" + smoke(module, name)
            checks.append((f"{module}:{name}", program))
    runner = "\n".join(
        f"exec(compile({program!r}, {label!r}, 'exec'), {{'__name__': '__main__'}})" for label, program in checks
    )
    run_fresh(runner, tmp_path)
