// softmax 饱和部件的界面：读两个滑块，算两行 logits 的 softmax 与 ‖J‖₂，重画两组条形。
(function () {
  "use strict";

  function init(figure) {
    const data = JSON.parse(figure.querySelector(".widget-data").textContent);
    const field = name => figure.querySelector(`.widget-controls [name=${name}]`);

    function render() {
      const dk = data.d_k[Number(field("d_k").value)];
      const sigma = data.sigma[Number(field("sigma").value)];
      for (const [name, value] of [["d_k", dk], ["sigma", sigma]]) {
        field(name).setAttribute("aria-valuetext", String(value));
        field(name).parentElement.querySelector("output").textContent = String(value);
      }
      const rows = {
        unscaled: data.g.map(g => sigma * Math.sqrt(dk) * g),   // 点积的方差是 d_k
        scaled: data.g.map(g => sigma * g),                      // 除以 √d_k 之后
      };
      for (const [name, z] of Object.entries(rows)) {
        const r = window.SaturationMath.saturation(z);
        const panel = figure.querySelector(`[data-panel=${name}]`);
        panel.querySelectorAll(".widget-bars li").forEach((li, j) => {
          li.querySelector(".widget-bar").style.setProperty("--w", r.p[j].toFixed(4));
          const value = li.querySelector(".widget-bar-value");
          value.dataset.w = String(r.p[j]);
          value.textContent = r.p[j].toFixed(3);
        });
        for (const key of ["max", "jacobian_norm"]) {
          const el = panel.querySelector(`[data-key=${key}]`);
          el.dataset.v = String(r[key]);
          el.innerHTML = small(r[key]);
        }
      }
      figure.dataset.state = JSON.stringify({ d_k: dk, sigma });
    }

    figure.querySelector(".widget-controls").addEventListener("input", render);
    render();
    figure.dataset.ready = "true";
  }

  // 3 位小数；小于 0.001 的数写成 7.44×10⁻⁵（与生成器的 small 相同）
  function small(x) {
    if (x === 0 || x >= 1e-3) return x.toFixed(3);
    const e = Math.floor(Math.log10(x));
    return `${(x / 10 ** e).toFixed(2)}×10<sup>−${-e}</sup>`;
  }

  (window.siteWidgets = window.siteWidgets || {}).saturation = init;
})();
