// 梯度随距离部件的界面：读两个滑块，重算三条曲线（对数纵轴）与 k 最大时的三个数。
(function () {
  "use strict";

  function init(figure) {
    const data = JSON.parse(figure.querySelector(".widget-data").textContent);
    const field = name => figure.querySelector(`.widget-controls [name=${name}]`);
    const c = data.chart;

    // 与生成器的 chart_points 相同
    function points(values) {
      const w = c.width - c.left - c.right, h = c.height - c.top - c.bottom;
      const y = v => c.top + (c.high - Math.min(Math.max(Math.log10(v), c.low), c.high)) * h / (c.high - c.low);
      return values.map((v, i) => `${(c.left + i * w / (values.length - 1)).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
    }

    // 2 位有效数字的科学记数法（与生成器的 sci 相同）
    function sci(x) {
      let e = Math.floor(Math.log10(x)), m = x / 10 ** e;
      if (Math.round(m * 10) / 10 >= 10) { m /= 10; e += 1; }
      return `${m.toFixed(1)}×10<sup>${e < 0 ? "−" + -e : e}</sup>`;
    }

    function render() {
      const rho = data.rho[Number(field("rho").value)];
      const forgetBias = data.forget_bias[Number(field("forget_bias").value)];
      for (const [name, value] of [["rho", rho], ["forget_bias", forgetBias]]) {
        field(name).setAttribute("aria-valuetext", String(value));
        field(name).parentElement.querySelector("output").textContent = String(value);
      }
      const lstm = window.GradientsMath.lstmNorms(data, forgetBias);
      const series = { rnn: window.GradientsMath.rnnNorms(data, rho), lstm: lstm.full, direct: lstm.direct };
      for (const [name, values] of Object.entries(series)) {
        const line = figure.querySelector(`polyline.widget-series-${name}`);
        line.setAttribute("points", points(values));
        line.dataset.v = JSON.stringify(values);
        const last = figure.querySelector(`[data-key=${name}]`);
        last.dataset.v = String(values[values.length - 1]);
        last.innerHTML = sci(values[values.length - 1]);
      }
      figure.dataset.state = JSON.stringify({ rho, forget_bias: forgetBias });
    }

    figure.querySelector(".widget-controls").addEventListener("input", render);
    render();
    figure.dataset.ready = "true";
  }

  (window.siteWidgets = window.siteWidgets || {}).gradients = init;
})();
