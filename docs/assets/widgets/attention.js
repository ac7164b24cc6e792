// 注意力游乐场的界面：读控件，调 AttentionMath 算权重，重画热图与条形。
// 页面先由构建写好默认状态（sitebuild/generate/render/ch03_widget.py），这里接管之后的交互。
(function () {
  "use strict";

  function init(figure) {
    const data = JSON.parse(figure.querySelector(".widget-data").textContent);
    const form = figure.querySelector(".widget-controls");
    const view = figure.querySelector(".widget-view");
    const field = name => form.querySelector(`[name=${name}]`);

    function state() {
      return {
        scale: field("scale").checked,
        temperature: data.temperatures[Number(field("temperature").value)],
        causal: field("causal").checked,
        pad: field("pad").checked,
        query: Number(field("query").value),
      };
    }

    function render() {
      const s = state();
      const slider = field("temperature");
      slider.setAttribute("aria-valuetext", String(s.temperature));
      slider.parentElement.querySelector("output").textContent = String(s.temperature);
      const w = window.AttentionMath.attentionWeights(data.q, data.k, s);
      view.querySelectorAll(".widget-heatmap tbody tr").forEach((tr, i) => {
        tr.querySelectorAll("td").forEach((td, j) => paint(td, w[i][j], 2));
      });
      const bars = view.querySelector(".widget-bars");
      bars.setAttribute("aria-label", `查询「${data.tokens[s.query]}」的权重`);
      bars.querySelectorAll("li").forEach((li, j) => {
        li.querySelector(".widget-bar").style.setProperty("--w", w[s.query][j].toFixed(4));
        paint(li.querySelector(".widget-bar-value"), w[s.query][j], 3);
      });
      figure.dataset.state = JSON.stringify(s);
    }

    // 显示 digits 位小数；data-w 留完整精度（测试读它）；--w 控制颜色深浅或条长
    function paint(el, value, digits) {
      el.dataset.w = String(value);
      el.textContent = value.toFixed(digits);
      if (el.tagName === "TD") el.style.setProperty("--w", value.toFixed(4));
    }

    form.addEventListener("input", render);
    form.addEventListener("change", render);
    render();
    figure.dataset.ready = "true";
  }

  (window.siteWidgets = window.siteWidgets || {}).attention = init;
})();
