"""The checker itself: the command line (list, show, check), the stubs, the report for a function that
is not written yet or has the wrong signature, determinism, and the links of every hint and solution
(to an anchor that exists on that chapter page)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from snippets.exercises import __main__ as cli
from snippets.exercises import check, core, exercises, run, stub

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = core.load_all()


def test_list_prints_every_exercise_of_a_chapter(capsys):
    assert cli.main(["list", "ch03"]) == 0
    out = capsys.readouterr().out
    ids = [line.split()[0] for line in out.splitlines() if line.startswith("ch")]
    assert ids == [e.id for e in exercises("ch03")] and len(ids) >= 3
    assert f"共 {len(ids)} 道" in out
    assert cli.main(["list"]) == 0
    assert len([ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("ch")]) == len(EXERCISES)
    assert cli.main(["list", "ch99"]) == 2


def test_check_a_file_from_the_command_line(tmp_path, capsys):
    wrong = tmp_path / "my_solution.py"
    wrong.write_text("import torch\n\ndef masked_softmax(scores, mask=None):\n"
                     "    if mask is not None:\n        scores = scores.masked_fill(~mask, float('-inf'))\n"
                     "    return torch.softmax(scores, -1)\n", encoding="utf-8")
    assert cli.main(["check", "ch03.masked_softmax", str(wrong)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("✘ ch03.masked_softmax") and "整行被遮住" in out
    right = tmp_path / "right.py"
    right.write_text("from snippets.softmax import masked_softmax as mine\n", encoding="utf-8")
    assert cli.main(["check", "ch03.masked_softmax", str(right), "--name", "mine"]) == 0
    assert capsys.readouterr().out.startswith("✔ ch03.masked_softmax")
    assert cli.main(["check", "ch03.masked_softmax", str(right)]) == 2  # no function named masked_softmax
    assert cli.main(["check", "ch03.no_such", str(right)]) == 2


@pytest.mark.slow  # a fresh interpreter
def test_module_runs_as_a_script():
    proc = subprocess.run([sys.executable, "-m", "snippets.exercises", "show", "ch05.rms_norm"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "def rms_norm(x, gain, eps=1e-6):" in proc.stdout and "NotImplementedError" in proc.stdout


@pytest.mark.parametrize("eid", list(EXERCISES))
def test_stub_has_the_signature_and_reports_not_implemented(eid):
    ex = EXERCISES[eid]
    assert stub(eid).startswith(f"def {ex.signature}:")
    namespace = {}
    exec(ex.stub, namespace)
    result = run(eid, namespace[ex.name])
    assert result.failed == "not-implemented" and "还没有实现" in result.report


def test_wrong_signature_and_not_a_function_are_reported_in_chinese(capsys):
    result = run("ch03.masked_softmax", lambda scores: scores)
    assert result.failed == "signature" and "缺少参数 mask" in result.report
    assert run("ch03.masked_softmax", 3).failed == "not-callable"
    check("ch02.causal_mask", lambda n: None)
    assert capsys.readouterr().out.startswith("✘ ch02.causal_mask")
    with pytest.raises(KeyError, match="ch03.masked_softmax"):
        run("ch04.masked_softmax", lambda s, m=None: s)


def test_bad_input_must_raise_an_error_that_names_the_argument():
    def vague(x, num_heads):
        raise ValueError("bad input")

    result = run("ch04.split_heads", vague)
    assert result.failed == "matches"  # a function that always raises fails on good input first

    def vague_on_bad(x, num_heads):
        if x.shape[-1] % num_heads:
            raise ValueError("bad input")
        return x.view(x.shape[0], x.shape[1], num_heads, -1).transpose(1, 2)

    result = run("ch04.split_heads", vague_on_bad)
    assert result.failed == "bad-num_heads" and "没有提到参数 num_heads" in result.report


def test_reports_are_deterministic():
    from tests.exercises.answers_ch03 import ms_minus_1e9

    first, second = run("ch03.masked_softmax", ms_minus_1e9), run("ch03.masked_softmax", ms_minus_1e9)
    assert first.report == second.report and first.failed == "fully-masked-row"


def test_the_smallest_failing_input_is_reported():
    """The forgotten tanh fails on every input: the report shows the smallest shapes the dims allow."""
    from tests.exercises.answers_ch01 import step_no_tanh

    report = run("ch01.rnn_step", step_no_tanh).report
    assert "x_t = 形状 (1, 1)" in report and "w_hh = 形状 (1, 1)" in report


def test_a_failing_input_is_shrunk_dimension_by_dimension():
    """A bug that shows only when d_h >= 4: the first failing sample is shrunk to batch 1, d_in 1, d_h 4, float64."""
    import torch

    from tests.exercises.answers_ch01 import step_einsum

    def wrong_when_wide(x_t, h_prev, w_xh, w_hh, b):
        out = step_einsum(x_t, h_prev, w_xh, w_hh, b)
        return out if w_hh.shape[0] < 4 else torch.zeros_like(out)

    report = run("ch01.rnn_step", wrong_when_wide).report
    assert "x_t = 形状 (1, 1) float64" in report and "w_hh = 形状 (4, 4) float64" in report, report


def test_the_checker_leaves_torch_threads_as_they_were():
    import torch

    before = torch.get_num_threads()
    run("ch03.stable_softmax", lambda z: z)
    assert torch.get_num_threads() == before


def _anchors(page: Path) -> set[str]:
    from pymdownx.slugs import slugify

    slug = slugify(case="lower")
    text = page.read_text(encoding="utf-8")
    found = set(re.findall(r"\{\s*#([^\s}]+)\s*\}", text))
    for heading in re.findall(r"^#{2,6} (.+)$", text, flags=re.M):
        found.add(slug(re.sub(r"\s*\{[^}]*\}\s*$", "", heading), "-"))
    return found


LINKS = sorted({(p.page, p.anchor) for e in EXERCISES.values() for p in e.properties}
               | {e.solution for e in EXERCISES.values()})


@pytest.mark.parametrize("page, anchor", LINKS, ids=[f"{p}#{a}" for p, a in LINKS])
def test_every_hint_and_solution_links_an_anchor_that_exists(page, anchor):
    path = ROOT / "docs/chapters" / page
    assert path.is_file(), page
    assert anchor in _anchors(path), f"{page} has no anchor #{anchor}"


QUESTIONS = sorted({(e.chapter, q) for e in EXERCISES.values() for q in e.questions})


@pytest.mark.parametrize("chapter, number", QUESTIONS, ids=[q for _, q in QUESTIONS])
def test_every_practised_question_exists_in_its_chapter(chapter, number):
    """Exercise.questions names interview questions of the exercise's own chapter ("3.7" in 03-*/questions.md)."""
    assert number.split(".")[0] == str(int(chapter[2:]))
    (page,) = (ROOT / "docs/chapters").glob(f"{chapter[2:]}-*/questions.md")
    assert f'??? question "{number}　' in page.read_text(encoding="utf-8")
