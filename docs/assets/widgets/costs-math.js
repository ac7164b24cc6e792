// 代价部件的数学部分（测试读的是这里算出的数）。与读者代码 snippets/probes/long_context.py 的闭式相同：
//   注意力 FLOPs：全 4n²d，窗口 4n·min(n, w)·d，线性 4nd²；线性层 24nd²（一次乘加记 2 次）；
//   解码时每层每头存的元素：全 2nd，窗口 2·min(n, w)·d，线性 d²。整数都小于 2⁵³，算得精确。
(function () {
  "use strict";

  function flops(n, d, method, w) {
    return { full: 4 * n * n * d, window: 4 * n * Math.min(n, w) * d, linear: 4 * n * d * d }[method];
  }

  function layerFlops(n, d) {
    return 24 * n * d * d;
  }

  function stateElems(n, d, method, w) {
    return { full: 2 * n * d, window: 2 * Math.min(n, w) * d, linear: d * d }[method];
  }

  // 一个状态下的全部数：每种方法的 FLOPs 与缓存字节、线性层、三个交点
  function state(data, n, d, w) {
    const each = f => Object.fromEntries(data.methods.map(m => [m, f(m)]));
    return {
      flops: each(m => flops(n, d, m, w)),
      layers: layerFlops(n, d),
      bytes: each(m => data.bytes * stateElems(n, d, m, w)),
      cross: { linear: d, layers: 6 * d, window: w },
    };
  }

  // 两张图上的曲线，在 data.ns 的每个 n 上
  function curves(data, d, w) {
    const out = {};
    for (const m of data.methods) out[`flops-${m}`] = data.ns.map(n => flops(n, d, m, w));
    out["flops-layers"] = data.ns.map(n => layerFlops(n, d));
    for (const m of data.methods) out[`bytes-${m}`] = data.ns.map(n => data.bytes * stateElems(n, d, m, w));
    return out;
  }

  window.CostsMath = { flops, layerFlops, stateElems, state, curves };
})();
