// 位置编码部件的界面：读三个滑块，算 PositionalMath.state，重画热图、表、曲线和旋转。
(function () {
  "use strict";

  function init(figure) {
    const data = JSON.parse(figure.querySelector(".widget-data").textContent);
    const field = name => figure.querySelector(`.widget-controls [name=${name}]`);
    const image = figure.querySelector(".widget-pe-map img");
    let drawnBase = data.default.base;  // 构建时写好的热图就是这个底数

    // 热图：每个像素一个数，正值一种颜色、负值另一种，透明度 = |值|（与生成器相同）
    function heatmap(omega) {
      const canvas = document.createElement("canvas");
      canvas.width = data.positions;
      canvas.height = data.d;
      const ctx = canvas.getContext("2d");
      const pixels = ctx.createImageData(data.positions, data.d);
      for (let p = 0; p < data.positions; p++) {
        window.PositionalMath.encoding(p, omega).forEach((v, dim) => {
          const at = 4 * (dim * data.positions + p);
          pixels.data.set([...(v >= 0 ? data.positive : data.negative), Math.round(Math.abs(v) * 255)], at);
        });
      }
      ctx.putImageData(pixels, 0, 0);
      return canvas.toDataURL("image/png");
    }

    function points(values) {
      const { width: w, height: h, pad } = data.curve, half = data.d / 2;
      return values.map((v, j) => `${(pad + j * (w - 2 * pad) / (values.length - 1)).toFixed(1)},` +
        `${(pad + (half - v) * (h - 2 * pad) / (2 * half)).toFixed(1)}`).join(" ");
    }

    function show(el, value, digits) {
      el.dataset.v = String(value);
      el.textContent = value.toFixed(digits);
    }

    function render() {
      const p = Number(field("p").value);
      const base = data.bases[Number(field("base").value)];
      const pair = Number(field("pair").value);
      for (const [name, value] of [["p", p], ["base", base], ["pair", pair]]) {
        field(name).setAttribute("aria-valuetext", String(value));
        field(name).parentElement.querySelector("output").textContent = String(value);
      }
      const s = window.PositionalMath.state(data, p, base, pair);
      if (base !== drawnBase) { image.src = heatmap(s.omega); drawnBase = base; }
      figure.querySelector(".widget-cursor").style.setProperty("--x", ((p + 0.5) / data.positions).toFixed(4));
      figure.querySelectorAll(".widget-pe-table tbody tr").forEach((tr, i) => {
        const cells = tr.querySelectorAll("[data-v]");
        show(cells[0], s.omega[i], 4);
        show(cells[1], s.pe[2 * i], 3);
        show(cells[2], s.pe[2 * i + 1], 3);
        tr.classList.toggle("widget-current", i === pair);
      });
      const { width: w, pad } = data.curve;
      const x = (pad + p * (w - 2 * pad) / (data.positions - 1)).toFixed(1);
      const cursor = figure.querySelector(".widget-curve-cursor");
      cursor.setAttribute("x1", x);
      cursor.setAttribute("x2", x);
      const line = figure.querySelector(".widget-curve polyline");
      line.setAttribute("points", points(s.gram));
      line.dataset.v = JSON.stringify(s.gram);
      figure.querySelector("[data-key=peak]").textContent = String(p);
      const key = name => figure.querySelector(`[data-panel=rope] [data-key=${name}]`);
      show(key("angle"), s.angle, 3);
      show(key("wavelength"), s.wavelength, 1);
      key("pair0").textContent = s.pair[0].toFixed(3);
      key("pair1").textContent = s.pair[1].toFixed(3);
      show(key("rotated0"), s.rotated[0], 3);
      show(key("rotated1"), s.rotated[1], 3);
      const norm = Math.hypot(...s.pair);
      for (const [cls, v] of [["before", s.pair], ["after", s.rotated]]) {
        const el = figure.querySelector(`.widget-rope-${cls}`);
        el.setAttribute("x2", (60 + 50 * v[0] / norm).toFixed(2));
        el.setAttribute("y2", (60 - 50 * v[1] / norm).toFixed(2));
      }
      figure.dataset.state = JSON.stringify({ p, base, pair });
    }

    figure.querySelector(".widget-controls").addEventListener("input", render);
    render();
    figure.dataset.ready = "true";
  }

  (window.siteWidgets = window.siteWidgets || {}).positional = init;
})();
