"""Figures a reader can play with (issue 39): each widget, driven through its controls by keyboard
as a reader would, computes what the reader code computes. The numbers are read from the widget
(data-w holds each weight at full precision), not from pixels.

The widget's maths is docs/assets/widgets/<name>-math.js; the reference is the Python function the
page includes, called by the widget's generator (sitebuild/generate/render/ch03_widget.py).
"""

from __future__ import annotations

import itertools

import pytest

from sitebuild.generate.render import ch03_widget
from tests.browser.helpers import opened

PAGE = "chapters/03-scaled-dot-product/derivation-softmax/"
TOLERANCE = 1e-9

READ_JS = """f => ({
  ready: f.dataset.ready === 'true',
  state: JSON.parse(f.dataset.state || '{}'),
  heatmap: [...f.querySelectorAll('.widget-heatmap tbody tr')].map(tr =>
    [...tr.querySelectorAll('td')].map(td => Number(td.dataset.w))),
  bars: [...f.querySelectorAll('.widget-bar-value')].map(el => Number(el.dataset.w)),
  shown: [...f.querySelectorAll('.widget-heatmap tbody td')].map(td => td.textContent),
})"""


def _read(figure) -> dict:
    return figure.evaluate(READ_JS)


def _close(got: list[list[float]], want: list[list[float]]) -> bool:
    """Row by row within TOLERANCE, and of the same shape (zip alone would drop a missing value)."""
    return (len(got) == len(want) and all(len(gr) == len(wr) for gr, wr in zip(got, want))
            and all(abs(g - w) <= TOLERANCE for gr, wr in zip(got, want) for g, w in zip(gr, wr)))


def _start(page, figure) -> None:
    """Scroll the widget into view, as a reader would, and wait until its script has drawn it."""
    figure.scroll_into_view_if_needed()
    page.wait_for_function("f => f.dataset.ready === 'true'", arg=figure.element_handle(), timeout=20_000)


def _press(page, control, key: str) -> None:
    control.focus()
    page.keyboard.press(key)


@pytest.mark.claim("ch03-widget-attention", paper="§3.2.1",
                   title="注意力游乐场算的就是参考代码",
                   text="第 03 章的注意力游乐场：用键盘切换「除以 √d_k」、温度（5 档）、因果掩码、填充和查询，"
                        "全部 40 种组合（2 × 5 × 2 × 2）下，浏览器算出的每个权重与 scaled_dot_product_attention 的结果相差不超过 1e-9；"
                        "没有脚本时页面显示的默认状态也是参考代码的结果")
def test_attention_playground_computes_what_the_reader_code_computes(chromium_browser, site_url):
    with opened(chromium_browser, site_url + PAGE) as page:
        figure = page.locator("figure.widget-attention")
        # the built page shows the default state before any script runs
        before = _read(figure)
        default = ch03_widget.DEFAULT
        want = ch03_widget.reference_weights(default["scale"], default["temperature"], default["causal"], default["pad"])
        assert not before["ready"] and _close(before["heatmap"], want), before
        _start(page, figure)
        field = {name: figure.locator(f"[name={name}]") for name in ("scale", "temperature", "causal", "pad", "query")}
        seen = 0
        temps = ch03_widget.TEMPERATURES
        _press(page, field["temperature"], "Home")  # τ = the lowest
        for scale, causal, pad in itertools.product((True, False), repeat=3):
            for name, on in (("scale", scale), ("causal", causal), ("pad", pad)):
                if field[name].is_checked() != on:
                    _press(page, field[name], "Space")
            for step, temperature in enumerate(temps):
                if step:
                    _press(page, field["temperature"], "ArrowRight")
                got = _read(figure)
                assert got["state"]["temperature"] == temperature, got["state"]
                want = ch03_widget.reference_weights(scale, temperature, causal, pad)
                assert _close(got["heatmap"], want), (scale, temperature, causal, pad, got["heatmap"], want)
                query = got["state"]["query"]
                assert _close([got["bars"]], [want[query]]), (query, got["bars"], want[query])
                seen += 1
            _press(page, field["temperature"], "Home")
        assert seen == 8 * len(temps) == 40
        # what the page says: without 1/√d_k (d_k = 4) the weights are those at half the temperature;
        # with the causal mask the first query keeps all its weight on itself
        assert _close(ch03_widget.reference_weights(False, 1.0, False, False),
                      ch03_widget.reference_weights(True, 0.5, False, False))
        assert ch03_widget.reference_weights(True, 1.0, True, False)[0][0] == 1.0
        # the query picker moves the bars to another row; the table shows two decimals
        _press(page, field["query"], "ArrowUp")
        got = _read(figure)
        want = ch03_widget.reference_weights(*(got["state"][k] for k in ("scale", "temperature", "causal", "pad")))
        assert got["state"]["query"] == default["query"] - 1 and _close([got["bars"]], [want[got["state"]["query"]]])
        assert all(len(s.split(".")[1]) == 2 for s in got["shown"]), got["shown"]


def _relative(got: float, want: float) -> bool:
    return abs(got - want) <= TOLERANCE * abs(want) + 1e-300


SATURATION_JS = """f => ({
  ready: f.dataset.ready === 'true',
  state: JSON.parse(f.dataset.state || '{}'),
  panels: Object.fromEntries([...f.querySelectorAll('[data-panel]')].map(p => [p.dataset.panel, {
    p: [...p.querySelectorAll('.widget-bar-value')].map(el => Number(el.dataset.w)),
    max: Number(p.querySelector('[data-key=max]').dataset.v),
    jacobian_norm: Number(p.querySelector('[data-key=jacobian_norm]').dataset.v),
  }])),
})"""


@pytest.mark.claim("ch03-widget-saturation", paper="§3.2.1",
                   title="饱和部件算的就是参考代码",
                   text="第 03 章的 softmax 饱和部件：用键盘走遍 d_k（6 档）与分数尺度 σ（3 档）的全部 18 种组合，"
                        "两种 logits（不缩放、除以 √d_k）的每个权重、最大权重和 ‖J‖₂ 与 stable_softmax、softmax_jacobian "
                        "的结果相对误差不超过 1e-9；σ = 1、d_k = 1024 时不缩放的 ‖J‖₂ 低于 1e-5，缩放后的与 d_k 无关")
def test_saturation_widget_computes_what_the_reader_code_computes(chromium_browser, site_url):
    def same(got: dict, want: dict) -> bool:
        return all(len(got[n]["p"]) == len(want[n]["p"]) and all(map(_relative, got[n]["p"], want[n]["p"]))
                   and _relative(got[n]["max"], want[n]["max"])
                   and _relative(got[n]["jacobian_norm"], want[n]["jacobian_norm"]) for n in ("unscaled", "scaled"))

    with opened(chromium_browser, site_url + PAGE) as page:
        figure = page.locator("figure.widget-saturation")
        before = figure.evaluate(SATURATION_JS)
        default = ch03_widget.SAT_DEFAULT
        assert not before["ready"] and same(before["panels"], ch03_widget.reference_saturation(**default)), before
        _start(page, figure)
        d_k, sigma = figure.locator("[name=d_k]"), figure.locator("[name=sigma]")
        _press(page, sigma, "Home")
        seen = {}
        for i, s in enumerate(ch03_widget.SIGMAS):
            if i:
                _press(page, sigma, "ArrowRight")
            _press(page, d_k, "Home")
            for j, d in enumerate(ch03_widget.D_K_VALUES):
                if j:
                    _press(page, d_k, "ArrowRight")
                got = figure.evaluate(SATURATION_JS)
                assert got["state"] == {"d_k": d, "sigma": s}, got["state"]
                want = ch03_widget.reference_saturation(d, s)
                assert same(got["panels"], want), (d, s, got["panels"], want)
                seen[(d, s)] = got["panels"]
        assert len(seen) == 18
        # what the page says: at σ = 1, d_k = 1024 the unscaled row's ‖J‖₂ is below 1e-5; the scaled row is the same for every d_k
        assert seen[(1024, 1.0)]["unscaled"]["jacobian_norm"] < 1e-5
        assert len({seen[(d, 1.0)]["scaled"]["jacobian_norm"] for d in ch03_widget.D_K_VALUES}) == 1


POSITIONAL_PAGE = "chapters/07-positional-encoding/derivation/"
POSITIONAL_JS = """f => ({
  ready: f.dataset.ready === 'true',
  state: JSON.parse(f.dataset.state || '{}'),
  omega: [...f.querySelectorAll('.widget-pe-table tbody tr')].map(tr => Number(tr.querySelectorAll('[data-v]')[0].dataset.v)),
  pe: [...f.querySelectorAll('.widget-pe-table tbody tr')].flatMap(tr =>
    [...tr.querySelectorAll('[data-v]')].slice(1).map(el => Number(el.dataset.v))),
  gram: JSON.parse(f.querySelector('.widget-curve polyline').dataset.v),
  points: f.querySelector('.widget-curve polyline').getAttribute('points'),
  angle: Number(f.querySelector('[data-key=angle]').dataset.v),
  wavelength: Number(f.querySelector('[data-key=wavelength]').dataset.v),
  rotated: [Number(f.querySelector('[data-key=rotated0]').dataset.v), Number(f.querySelector('[data-key=rotated1]').dataset.v)],
  current: [...f.querySelectorAll('.widget-pe-table tbody tr')].findIndex(tr => tr.classList.contains('widget-current')),
  image: f.querySelector('.widget-pe-map img').src,
})"""


@pytest.mark.claim("ch07-widget-positional", paper="§3.5",
                   title="位置编码部件算的就是参考代码",
                   text="第 07 章的位置编码部件（d = 16，位置 0–63）：用键盘走遍 4 个底数，每个底数下位置取 0、1、63，"
                        "再走遍 8 对，浏览器算出的 ω_i、PE(p) 的 16 个分量、PE(p)·PE(j) 的 64 个值、RoPE 的角度、波长与转后的"
                        "两个数，与 sinusoidal_positional_encoding、rope_frequencies、apply_rope 的结果相差不超过 1e-9；"
                        "内积曲线的峰在 j = p、高 d/2 = 8，两侧对称")
def test_positional_widget_computes_what_the_reader_code_computes(chromium_browser, site_url):
    from sitebuild.generate.render import ch07_widget as w

    def same(got: dict, want: dict) -> bool:
        return (_close([got["omega"], got["pe"], got["gram"], got["rotated"]],
                       [want["omega"], want["pe"], want["gram"], want["rotated"]])
                and abs(got["angle"] - want["angle"]) <= TOLERANCE
                and _relative(got["wavelength"], want["wavelength"]))

    with opened(chromium_browser, site_url + POSITIONAL_PAGE) as page:
        figure = page.locator("figure.widget-positional")
        before = figure.evaluate(POSITIONAL_JS)
        default = w.DEFAULT
        assert not before["ready"] and same(before, w.reference(**default)), before
        assert before["points"] == w.curve_points(before["gram"])
        built_image = before["image"]
        _start(page, figure)
        field = {name: figure.locator(f"[name={name}]") for name in ("p", "base", "pair")}
        seen, pair_now, images = 0, default["pair"], set()
        _press(page, field["base"], "Home")
        for b, base in enumerate(w.BASES):
            if b:
                _press(page, field["base"], "ArrowRight")
            for key, p in (("Home", 0), ("ArrowRight", 1), ("End", w.POSITIONS - 1)):
                _press(page, field["p"], key)
                got = figure.evaluate(POSITIONAL_JS)
                assert got["state"] == {"p": p, "base": base, "pair": pair_now}, got["state"]
                assert same(got, w.reference(p, base, pair_now)), (p, base, got)
                # the curve is PE(p)·PE(j): its peak is at j = p, d/2 high, and it is symmetric about p
                assert max(range(w.POSITIONS), key=got["gram"].__getitem__) == p and abs(got["gram"][p] - w.D / 2) < 1e-12
                assert all(abs(got["gram"][p - k] - got["gram"][p + k]) < 1e-9
                           for k in range(1, min(p, w.POSITIONS - 1 - p) + 1))
                seen += 1
            _press(page, field["pair"], "Home")
            for pair in range(w.D // 2):
                if pair:
                    _press(page, field["pair"], "ArrowRight")
                got = figure.evaluate(POSITIONAL_JS)
                assert got["state"]["pair"] == pair and got["current"] == pair
                assert same(got, w.reference(w.POSITIONS - 1, base, pair)), (base, pair, got)
                seen += 1
            pair_now = w.D // 2 - 1
            images.add(got["image"])
        # the map is redrawn for every base
        assert len(images) == len(w.BASES) and built_image.startswith("data:image/png;base64,")
        assert seen == len(w.BASES) * (3 + w.D // 2) == 44


GRADIENTS_PAGE = "chapters/01-why-attention/lstm/"
GRADIENTS_JS = """f => ({
  ready: f.dataset.ready === 'true',
  state: JSON.parse(f.dataset.state || '{}'),
  series: Object.fromEntries([...f.querySelectorAll('.widget-chart polyline')].map(p =>
    [p.getAttribute('class').replace('widget-series-', ''), {v: JSON.parse(p.dataset.v), points: p.getAttribute('points')}])),
  last: Object.fromEntries([...f.querySelectorAll('.widget-legend [data-key]')].map(el => [el.dataset.key, Number(el.dataset.v)])),
})"""


@pytest.mark.claim("ch01-widget-gradients", paper="§1; Gers et al. 2000",
                   title="梯度部件算的就是参考代码",
                   text="第 01 章的梯度部件（n = 60，d = 8，k = 1…50）：用键盘走遍 ρ 的 6 档和 b_f 的 −2、1、5，浏览器算出的"
                        "tanh RNN 的 ‖∂h_T/∂h_{T−k}‖₂ 与 LSTM 的 ‖∂c_T/∂c_{T−k}‖₂（完整与直接路径）与 gradient_norms、"
                        "cell_state_jacobians 的结果相对误差不超过 1e-9；ρ ≤ 1.1 时 k = 50 处低于 1e-9，ρ = 2 时始终低于 10；"
                        "b_f = −2 的直接路径在 k = 50 处低于 1e-40，b_f = 5 的直接路径约 0.7、完整路径大于 1")
def test_gradients_widget_computes_what_the_reader_code_computes(chromium_browser, site_url):
    from sitebuild.generate.render import ch01_widget as w

    def same(got: list[float], want: list[float]) -> bool:
        return len(got) == len(want) == w.K_MAX and all(map(_relative, got, want))

    with opened(chromium_browser, site_url + GRADIENTS_PAGE) as page:
        figure = page.locator("figure.widget-gradients")
        before = figure.evaluate(GRADIENTS_JS)
        lstm = w.reference_lstm(w.DEFAULT["forget_bias"])
        assert not before["ready"] and same(before["series"]["rnn"]["v"], w.reference_rnn(w.DEFAULT["rho"]))
        assert same(before["series"]["lstm"]["v"], lstm["full"]) and same(before["series"]["direct"]["v"], lstm["direct"])
        _start(page, figure)
        rho, bias = figure.locator("[name=rho]"), figure.locator("[name=forget_bias]")
        _press(page, rho, "Home")
        for i, r in enumerate(w.RHOS):
            if i:
                _press(page, rho, "ArrowRight")
            got = figure.evaluate(GRADIENTS_JS)
            want = w.reference_rnn(r)
            assert got["state"]["rho"] == r and same(got["series"]["rnn"]["v"], want), (r, got["series"]["rnn"]["v"], want)
            assert _relative(got["last"]["rnn"], want[-1])
            # what the page says: ρ ≤ 1.1 falls below 1e-9 by k = 50; at ρ = 2 saturation keeps it under 10
            if r <= 1.1:
                assert want[-1] < 1e-9, (r, want[-1])
            assert max(want) < 10, (r, max(want))
        seen = {}
        _press(page, bias, "Home")
        for j, b in enumerate(w.FORGET_BIASES):
            if j:
                _press(page, bias, "ArrowRight")
            if b not in (-2.0, 1.0, 5.0):      # the reference is 50 autograd Jacobians a value: three of six suffice
                continue
            got = figure.evaluate(GRADIENTS_JS)
            want = w.reference_lstm(b)
            assert got["state"]["forget_bias"] == b
            assert same(got["series"]["lstm"]["v"], want["full"]) and same(got["series"]["direct"]["v"], want["direct"]), b
            seen[b] = want
        assert seen[-2.0]["direct"][-1] < 1e-40
        assert seen[5.0]["full"][-1] > 1 and seen[5.0]["full"][-1] > seen[5.0]["direct"][-1]
        assert round(seen[5.0]["direct"][-1], 1) == 0.7          # 「直接路径仍有 0.7 左右」


COSTS_PAGE = "chapters/13-long-context/derivation/"
COSTS_JS = """f => ({
  ready: f.dataset.ready === 'true',
  state: JSON.parse(f.dataset.state || '{}'),
  flops: Object.fromEntries([...f.querySelectorAll('.widget-costs-table tbody tr')].map(tr =>
    [tr.dataset.method, Number(tr.querySelector('[data-key=flops]').dataset.v)])),
  bytes: Object.fromEntries([...f.querySelectorAll('.widget-costs-table tbody tr')].map(tr =>
    [tr.dataset.method, Number(tr.querySelector('[data-key=bytes]').dataset.v)])),
  shown: [...f.querySelectorAll('.widget-costs-table tbody td')].map(td => td.textContent),
  layers: Number(f.querySelector('[data-key=layers]').dataset.v),
  cross: Object.fromEntries(['linear', 'layers', 'window'].map(k =>
    [k, Number(f.querySelector(`[data-key=cross-${k}]`).textContent.replaceAll(',', ''))])),
  points: Object.fromEntries([...f.querySelectorAll('polyline[data-series]')].map(p =>
    [p.dataset.series, p.getAttribute('points')])),
  dots: Object.fromEntries([...f.querySelectorAll('[data-cross]')].map(c =>
    [c.dataset.cross, [c.getAttribute('cx'), c.getAttribute('cy')]])),
  current: [...f.querySelectorAll('.widget-costs-table tr.widget-current')].map(tr => tr.dataset.method),
  thick: [...f.querySelectorAll('polyline.widget-current')].map(p => p.dataset.series),
  outputs: [...f.querySelectorAll('.widget-controls output')].map(o => o.textContent),
})"""


@pytest.mark.claim("ch13-widget-costs", paper="第 13 章 预算; §4 表 1",
                   title="代价部件算的就是闭式",
                   text="第 13 章的代价部件：用键盘走遍 d 的 3 档与 w 的 5 档，每种下 n 取 64、128 与 1,048,576，再在默认的 d、w 下"
                        "走遍 n 的 15 档和三种方法，浏览器算出的全注意力、滑动窗口、线性注意力的 FLOPs 与解码缓存字节、线性层的 FLOPs"
                        "与 attention_flops、linear_layer_flops、decode_state_elems 精确相等；交点在 n = d、n = 6d、n = w，"
                        "两张图的折线与生成器画的相同")
def test_costs_widget_computes_what_the_closed_forms_compute(chromium_browser, site_url):
    from sitebuild.generate.render import ch13_widget as w

    def check(got: dict, n: int, d: int, win: int) -> None:
        want = w.reference(n, d, win)
        assert got["flops"] == want["flops"] and got["bytes"] == want["bytes"], (n, d, win, got, want)
        assert got["layers"] == want["layers"] and got["cross"] == want["cross"] == {"linear": d, "layers": 6 * d,
                                                                                    "window": win}
        flops = {m: want["flops"][m] for m in w.METHODS}
        assert got["shown"] == [t for m in w.METHODS for t in (w.amount(flops[m], w.FLOP_UNITS),
                                                              w.amount(want["bytes"][m], w.BYTE_UNITS),
                                                              w.ratio(flops[m], flops["full"]))], got["shown"]

    with opened(chromium_browser, site_url + COSTS_PAGE) as page:
        figure = page.locator("figure.widget-costs")
        default = w.DEFAULT
        before = figure.evaluate(COSTS_JS)
        assert not before["ready"]
        check(before, default["n"], default["d"], default["w"])
        built = {k: before[k] for k in ("points", "dots")}
        _start(page, figure)
        after = figure.evaluate(COSTS_JS)
        # the script redraws the default state exactly as the generator drew it
        assert {k: after[k] for k in ("points", "dots")} == built and after["shown"] == before["shown"]
        assert after["outputs"] == before["outputs"] == ["32,768", "128", "4,096"]
        field = {name: figure.locator(f"[name={name}]") for name in ("n", "d", "w", "method")}
        seen = 0
        _press(page, field["d"], "Home")
        for i, d in enumerate(w.DS):
            if i:
                _press(page, field["d"], "ArrowRight")
            _press(page, field["w"], "Home")
            for j, win in enumerate(w.WINDOWS):
                if j:
                    _press(page, field["w"], "ArrowRight")
                for key, n in (("Home", w.NS[0]), ("ArrowRight", w.NS[1]), ("End", w.NS[-1])):
                    _press(page, field["n"], key)
                    got = figure.evaluate(COSTS_JS)
                    assert got["state"] == {"n": n, "d": d, "w": win, "method": default["method"]}, got["state"]
                    check(got, n, d, win)
                    seen += 1
        # back to the default d and w: every n, then every method
        _press(page, field["d"], "Home")
        _press(page, field["d"], "ArrowRight")
        _press(page, field["w"], "End")
        _press(page, field["w"], "ArrowLeft")
        _press(page, field["n"], "Home")
        for k, n in enumerate(w.NS):
            if k:
                _press(page, field["n"], "ArrowRight")
            got = figure.evaluate(COSTS_JS)
            assert got["state"]["n"] == n
            check(got, n, default["d"], default["w"])
            seen += 1
            if n == default["n"]:
                assert {k: got[k] for k in ("points", "dots")} == built
        assert seen == 3 * 5 * 3 + 15
        methods = set()
        field["method"].select_option("full")
        for step in range(len(w.METHODS)):
            if step:
                _press(page, field["method"], "ArrowDown")
            got = figure.evaluate(COSTS_JS)
            method = got["state"]["method"]
            assert got["current"] == [method] and got["thick"] == [f"flops-{method}", f"bytes-{method}"]
            methods.add(method)
        assert methods == set(w.METHODS)
        # what the page says: d 128 → 256 doubles the first two crossings and leaves the window's; at n = 1M the
        # window costs w/n of full attention; the linear state does not grow with n
        narrow, wide = w.reference(w.NS[0], 128, 4096)["cross"], w.reference(w.NS[0], 256, 4096)["cross"]
        assert wide == {"linear": 2 * narrow["linear"], "layers": 2 * narrow["layers"], "window": narrow["window"]}
        big = w.reference(w.NS[-1], 128, 4096)
        assert big["flops"]["window"] * w.NS[-1] == big["flops"]["full"] * 4096
        assert w.reference(w.NS[0], 128, 4096)["bytes"]["linear"] == big["bytes"]["linear"]
