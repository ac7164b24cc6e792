// 代价部件的界面：读三个滑块和方法，算 CostsMath.state 与曲线，重画两张图、交点、表和读数。
(function () {
  "use strict";

  const FLOP_UNITS = [["PFLOP", 1e15], ["TFLOP", 1e12], ["GFLOP", 1e9], ["MFLOP", 1e6], ["FLOP", 1]];
  const BYTE_UNITS = [["GiB", 2 ** 30], ["MiB", 2 ** 20], ["KiB", 2 ** 10], ["B", 1]];

  // 以下几个与生成器 sitebuild/generate/render/ch13_widget.py 的同名函数相同
  function amount(value, units) {
    const [unit, scale] = units.find(([, s]) => value >= s) || units[units.length - 1];
    const v = value / scale;
    return `${v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0)} ${unit}`;
  }

  function ratio(value, full) {
    const r = value / full;
    const short = x => x.toFixed(x >= 10 || x === Math.trunc(x) ? 0 : 2);
    return r >= 1 ? `${short(r)}×` : `1/${short(1 / r)}`;
  }

  function init(figure) {
    const data = JSON.parse(figure.querySelector(".widget-data").textContent);
    const c = data.chart;
    const field = name => figure.querySelector(`.widget-controls [name=${name}]`);
    const span = Math.log2(data.ns[data.ns.length - 1]) - Math.log2(data.ns[0]);
    const x = n => c.left + (Math.log2(n) - Math.log2(data.ns[0])) * (c.width - c.left - c.right) / span;
    const y = (v, [low, high]) =>
      c.top + (high - Math.min(Math.max(Math.log10(v), low), high)) * (c.height - c.top - c.bottom) / (high - low);
    const points = (values, range) => values.map((v, i) => `${x(data.ns[i]).toFixed(1)},${y(v, range).toFixed(1)}`).join(" ");

    function render() {
      const n = data.ns[Number(field("n").value)];
      const d = data.ds[Number(field("d").value)];
      const w = data.windows[Number(field("w").value)];
      const method = field("method").value;
      for (const [name, value] of [["n", n], ["d", d], ["w", w]]) {
        const text = value.toLocaleString("en-US");
        field(name).setAttribute("aria-valuetext", text);
        field(name).parentElement.querySelector("output").textContent = text;
      }
      const s = window.CostsMath.state(data, n, d, w);
      const series = window.CostsMath.curves(data, d, w);
      for (const [name, values] of Object.entries(series)) {
        const range = name.startsWith("flops") ? data.flops_range : data.bytes_range;
        const line = figure.querySelector(`[data-series=${name}]`);
        line.setAttribute("points", points(values, range));
        line.classList.toggle("widget-current", name.endsWith(`-${method}`));
      }
      figure.querySelectorAll(".widget-cursor-line").forEach(line => {
        line.setAttribute("x1", x(n).toFixed(1));
        line.setAttribute("x2", x(n).toFixed(1));
      });
      const at = { linear: window.CostsMath.flops(d, d, "full", w), layers: window.CostsMath.layerFlops(6 * d, d),
                   window: window.CostsMath.flops(w, d, "full", w) };
      for (const [k, v] of Object.entries(at)) {
        const dot = figure.querySelector(`[data-cross=${k}]`);
        dot.setAttribute("cx", x(s.cross[k]).toFixed(1));
        dot.setAttribute("cy", y(v, data.flops_range).toFixed(1));
        figure.querySelector(`[data-key=cross-${k}]`).textContent = s.cross[k].toLocaleString("en-US");
      }
      figure.querySelectorAll(".widget-costs-table tbody tr").forEach(tr => {
        const m = tr.dataset.method;
        const cell = key => tr.querySelector(`[data-key=${key}]`);
        cell("flops").dataset.v = String(s.flops[m]);
        cell("flops").textContent = amount(s.flops[m], FLOP_UNITS);
        cell("bytes").dataset.v = String(s.bytes[m]);
        cell("bytes").textContent = amount(s.bytes[m], BYTE_UNITS);
        cell("ratio").textContent = ratio(s.flops[m], s.flops.full);
        tr.classList.toggle("widget-current", m === method);
      });
      const layers = figure.querySelector("[data-key=layers]");
      layers.dataset.v = String(s.layers);
      layers.textContent = amount(s.layers, FLOP_UNITS);
      figure.dataset.state = JSON.stringify({ n, d, w, method });
    }

    figure.querySelector(".widget-controls").addEventListener("input", render);
    figure.querySelector(".widget-controls").addEventListener("change", render);
    render();
    figure.dataset.ready = "true";
  }

  (window.siteWidgets = window.siteWidgets || {}).costs = init;
})();
