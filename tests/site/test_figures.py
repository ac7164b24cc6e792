"""Rendering results → docs/generated/: byte-identical twice, placeholders without results, an invalid
results file stops the run, readable colours on both palettes, GPU columns only from GPU files;
phone-width figures with a dark twin and a provenance line next to them (not in the image)."""

import hashlib
import json
import re
from pathlib import Path

import pytest

from sitebuild.generate import figures
from sitebuild.generate.figures import OUT_DIR as GENERATED
from sitebuild.generate.render import _style as style
from sitebuild.generate.render import ch01_probe_tables
from sitebuild.generate.render._probes import probe_results
from snippets.results import RESULTS_DIR, load_all

EXPECTED = {
    "flops-vs-n.svg", "walltime-vs-n.svg", "path-length.svg", "memory-vs-n.svg", "gradient-decay.svg",
    "table1-measured.md", "flops-table.md", "memory-table.md", "gradient-table.md", "walltime-slopes.md",
    "sequential-dependency.md", "provenance.md", "attn-encoder-self.svg", "attn-decoder-masked.svg",
    "attn-cross.svg", "copy-task.md",
}
FIGURES = sorted(name[:-4] for name in EXPECTED if name.endswith(".svg"))


def _digests(out: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.iterdir())}


@pytest.mark.slow  # renders every figure again: seconds of matplotlib
def test_rendering_committed_results_is_byte_identical_to_the_site(tmp_path):
    """A fresh render equals docs/generated/ (made by `make figures` before the tests) byte for byte."""
    figures.render_all(RESULTS_DIR, tmp_path / "a")
    a = _digests(tmp_path / "a")
    assert EXPECTED <= set(a)
    site = {name: digest for name, digest in _digests(GENERATED).items() if name in a}
    assert site == a, "docs/generated/ differs from a fresh render: run `make figures` (or rendering is not deterministic)"
    svg = (tmp_path / "a" / "flops-vs-n.svg").read_text(encoding="utf-8")
    assert "<text" in svg or "font-family" in svg  # 文字是文字（svg.fonttype = none）
    assert "dc:date" not in svg.lower()
    assert "<dc:source>results/cpu-amd-epyc.json</dc:source>" in svg  # 画图用的结果文件记在元数据里
    assert "torch 2." not in svg  # 出处不画进图里：它在图旁边的一行 HTML 里
    line = (tmp_path / "a" / "flops-vs-n.source.md").read_text(encoding="utf-8")
    result = json.loads((RESULTS_DIR / "cpu-amd-epyc.json").read_text(encoding="utf-8"))
    prov = result["provenance"]
    # kept out of the search index (device, commit and file name are not what readers search)
    assert line.startswith('<p class="provenance" markdown data-search-exclude>') and line.count("\n") == 1
    for fragment in (prov["torch_version"], prov["date_utc"][:10], prov["git"]["commit"][:10],
                     "`results/cpu-amd-epyc.json`", "设备：CPU", f"用时 {style.runtime_label(prov['runtime_s'])}"):
        assert fragment in line, fragment


def test_run_times_come_from_the_results_files():
    """A run's time is measured, so a page shows it only from its results file (the provenance
    line's 「用时」, from runtime_s), never typed into the prose: 「约 4–6 分钟」 and 「用了 20 分钟」 were."""
    assert [style.runtime_label(t) for t in (0.0, 0.4, 44.75, 89.4, 325.49, 1212.95)] == [
        "不到 1 秒", "不到 1 秒", "45 秒", "89 秒", "5 分钟", "20 分钟"]
    typed = re.compile(r"(?:约|用了)\s*[\d.]+(?:\s*[–-]\s*[\d.]+)?\s*(?:分钟|秒)")
    docs = Path(__file__).resolve().parents[2] / "docs"
    found = [f"{md.relative_to(docs)}: {m.group(0)}" for md in sorted(docs.rglob("*.md"))
             if "generated" not in md.parts for m in typed.finditer(md.read_text(encoding="utf-8"))]
    assert not found, found


def _text_sizes(svg: str) -> list[float]:
    return [float(x) for x in re.findall(r"font-size: ([0-9.]+)px", svg)] + [
        float(x) for x in re.findall(r"font: (?:[a-z]+ )*([0-9.]+)px", svg)]


def test_figures_are_drawn_for_a_phone_column():
    """Each figure's smallest text, shrunk to a 390 px phone's column (or shown at its own size when it
    fits), is at least 11 CSS px. tests/browser/test_figures_phone.py measures the same on the pages."""
    for name in FIGURES:
        svg = (GENERATED / f"{name}.svg").read_text(encoding="utf-8")
        width = float(re.search(r'viewBox="0 0 ([0-9.]+) ', svg).group(1))  # pt; shown at 4/3 px per pt
        shown = min(style.PHONE_COLUMN_PX, width * 4 / 3)
        sizes = _text_sizes(svg)
        assert sizes, name
        assert min(sizes) * shown / width >= style.MIN_TEXT_PX, (name, min(sizes), width)
        assert "$\\mathdefault" not in svg, f"{name}: mathtext tick labels (70 % superscripts)"


def test_every_figure_has_a_dark_twin_and_a_provenance_line():
    for name in FIGURES:
        light = (GENERATED / f"{name}.svg").read_text(encoding="utf-8")
        dark = (GENERATED / f"{name}-dark.svg").read_text(encoding="utf-8")
        assert dark == style.dark_variant(light) and style.TEXT_COLOR in light and style.TEXT_COLOR not in dark
        assert style.DARK_TEXT_COLOR in dark, name
        # colours only: the same elements and text in the same places
        assert re.sub(r"#[0-9a-f]{6}", "#", light) == re.sub(r"#[0-9a-f]{6}", "#", dark), name
        line = (GENERATED / f"{name}.source.md").read_text(encoding="utf-8")
        assert 'class="provenance"' in line and "torch" in line, name


def test_pages_link_each_figure_to_its_svg_with_both_palettes_and_the_provenance_line():
    pages = "\n".join(p.read_text(encoding="utf-8") for p in sorted((GENERATED.parent / "chapters").glob("*/*.md")))
    for name in FIGURES:
        g = "../../generated/"
        m = re.search(rf"\[!\[[^\]]+\]\({g}{name}\.svg#only-light\)\{{ loading=lazy \}}"
                      rf"!\[[^\]]+\]\({g}{name}-dark\.svg#only-dark\)\{{ loading=lazy \}}\]\({g}{name}\.svg ", pages)
        assert m, f"{name}: not shown as [light + dark](svg) on any chapter page"
        assert f'--8<-- "docs/generated/{name}.source.md"' in pages or name in ("attn-encoder-self", "attn-decoder-masked")


@pytest.mark.slow  # every renderer once more, with no results: seconds of matplotlib
def test_empty_results_still_write_every_file(tmp_path):
    (tmp_path / "res").mkdir()
    figures.render_all(tmp_path / "res", tmp_path / "out")
    assert EXPECTED <= set(_digests(tmp_path / "out"))
    assert "尚无测量结果" in (tmp_path / "out" / "table1-measured.md").read_text(encoding="utf-8")
    assert "尚无测量结果" in (tmp_path / "out" / "copy-task.md").read_text(encoding="utf-8")


def test_an_invalid_results_file_stops_the_run(tmp_path, capsys):
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "copy-task.json").write_text(json.dumps({"kind": "copy-task"}), encoding="utf-8")
    assert figures.main(["--results", str(tmp_path / "res"), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "copy-task.json" in err and "$.provenance" in err
    assert not (tmp_path / "out").exists()


def test_palette_readable_on_light_and_dark_backgrounds():
    for color in style.PALETTE:  # data colours: the same in both variants (WCAG 1.4.11: 3:1)
        assert style.contrast_ratio(color, style.LIGHT_BACKGROUND) >= 3.0, color
        assert style.contrast_ratio(color, style.DARK_BACKGROUND) >= 3.0, color
    # text: dark grey in the light variant, light grey in the dark one (WCAG 1.4.3: 4.5:1)
    assert style.contrast_ratio(style.TEXT_COLOR, style.LIGHT_BACKGROUND) >= 4.5
    assert style.contrast_ratio(style.DARK_TEXT_COLOR, style.DARK_BACKGROUND) >= 4.5


def test_fixed_colours_in_renderers_show_on_both_pages():
    """A colour written into a renderer (not PALETTE, not TEXT_COLOR, which dark_variant swaps) is the same
    in both variants, so it needs 3:1 on the light page and on the dark one (the #333333 points of the
    ch12 roofline and the #555555 means of the ch09/ch10 dot plots all but vanished on the dark page)."""
    on_a_filled_cell = {("ch02_copy_task.py", "#ffffff")}  # heatmap labels drawn on a dark cell, not on the page
    for path in sorted(Path(style.__file__).parent.glob("*.py")):
        for colour in re.findall(r'color="(#[0-9a-fA-F]{6})"', path.read_text(encoding="utf-8")):
            if (path.name, colour.lower()) in on_a_filled_cell:
                continue
            for background in (style.LIGHT_BACKGROUND, style.DARK_BACKGROUND):
                assert style.contrast_ratio(colour, background) >= 3.0, (path.name, colour, background)


def test_gpu_column_group_replaces_pending_when_cuda_results_exist(tmp_path):
    """合成的（synthetic）GPU 结果只存在于临时目录，用来走通渲染代码；从不写进 results/。"""
    cpu = [r for r in probe_results(load_all()) if r["provenance"]["device"]["type"] == "cpu"]
    res = tmp_path / "res"
    res.mkdir()
    base = {k: v for k, v in cpu[0].items() if k != "_file"}
    (res / "cpu-a.json").write_text(json.dumps(base), encoding="utf-8")
    fake = json.loads(json.dumps(base))
    fake["provenance"]["device"] = {"type": "cuda", "name": "SYNTHETIC TEST GPU", "threads": 1, "driver": "0"}
    fake["provenance"]["command"] = "python -m snippets.probes --device cuda"
    fake["provenance"]["tag"] = "cuda-synthetic-test"
    wt = fake["probes"]["walltime"]
    wt["timer"] = "torch.cuda.Event(enable_timing=True)"
    wt["matmul_ceiling"] = [{"dtype": "bfloat16", "m": 8, "median_s": 1.0, "tflops": 1.0}]
    wt["sdpa_backends"] = [
        {"backend": "flash", "dtype": "bfloat16", "batch": 1, "heads": 1, "head_dim": 8, "n": 8,
         "median_s": 1.0, "tflops": 0.5, "fraction_of_bf16_matmul": 0.5},
        {"backend": "flash", "dtype": "float32", "batch": 1, "heads": 1, "head_dim": 8, "n": 8,
         "error": "RuntimeError: no kernel"},
    ]
    (res / "cuda-synthetic-test.json").write_text(json.dumps(fake), encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    for render in ch01_probe_tables.RENDERERS:  # the tables the probe results feed, not every figure
        render(load_all(res), out)
    table = (out / "table1-measured.md").read_text(encoding="utf-8")
    assert "GPU: pending" not in table and "GPU float32" in table
    sdpa = (out / "sdpa-backends.md").read_text(encoding="utf-8")
    assert "SDPA 各后端" in sdpa and "不可用：RuntimeError" in sdpa and "pending" not in sdpa


def test_make_figures_renders_again_only_when_an_input_or_an_output_changed(tmp_path, monkeypatch):
    """`make figures` skips the render when the inputs' digest and the written files match the stamp."""
    res, out = tmp_path / "res", tmp_path / "out"
    res.mkdir()
    renders = []

    def fake_render_all(results_dir, out_dir):  # the stamp logic, without matplotlib's seconds
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "a.md").write_text(f"{len(list(results_dir.glob('*.json')))}\n", encoding="utf-8")
        renders.append(1)
        return sorted(out_dir.iterdir())

    monkeypatch.setattr(figures, "render_all", fake_render_all)
    assert figures.render_if_changed(res, out) is not None
    assert figures.render_if_changed(res, out) is None and len(renders) == 1  # nothing changed
    (res / "x.json").write_text("{}", encoding="utf-8")  # a new results file
    assert figures.render_if_changed(res, out) is not None and len(renders) == 2
    (out / "a.md").write_text("edited by hand\n", encoding="utf-8")  # an output changed
    assert figures.render_if_changed(res, out) is not None and len(renders) == 3
    assert (out / "a.md").read_text(encoding="utf-8") == "1\n"
    (out / "a.md").unlink()  # an output deleted
    assert figures.render_if_changed(res, out) is not None and len(renders) == 4
    assert figures.render_if_changed(res, out, force=True) is not None and len(renders) == 5


def test_the_inputs_digest_covers_results_code_questions_and_chapter_titles(monkeypatch):
    """A change to a results file, a renderer, a questions file or a chapter's title changes the digest."""
    root = figures.ROOT
    files = {p.relative_to(root).as_posix() for pattern in figures.INPUTS for p in root.glob(pattern)}
    assert {"sitebuild/generate/render/_style.py", "sitebuild/generate/figures.py", "docs/errata.yml", "sitebuild/config.py",
            "snippets/results.py", "results/schema/provenance.schema.json"} <= files
    assert any(f.endswith("/questions.md") for f in files)
    digest = figures.inputs_digest()
    assert digest != figures.inputs_digest(figures.ROOT / "tests")  # other results, other digest
    titles = {**figures.chapters(), "ch99": ("第 99 章 新的一章", "chapters/99-new/index.md")}
    monkeypatch.setattr(figures, "chapters", lambda: titles)
    assert figures.inputs_digest() != digest
    # the errata page's commits come from docs/errata.yml's history: its last commit is an input,
    # HEAD is not (a commit elsewhere re-rendered everything, 8 s of every make test-fast after it)
    digest = figures.inputs_digest()
    asked = []
    real_run = figures.subprocess.run

    def run(cmd, **kw):
        asked.append(cmd)
        return real_run(["echo", "another-commit"], **kw) if cmd[:2] == ["git", "log"] else real_run(cmd, **kw)

    monkeypatch.setattr(figures.subprocess, "run", run)
    assert figures.inputs_digest() != digest and asked == [["git", "log", "-1", "--format=%H", "--", "docs/errata.yml"]]
