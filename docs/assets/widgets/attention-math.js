// 注意力游乐场的数学部分（与画图分开，测试读的是这里算出的数）。
// 与读者代码 snippets/attention.py 的 scaled_dot_product_attention 相同：
//   weights = softmax(Q Kᵀ · c / τ)，c = 1/√d_k（勾选「除以 √d_k」）或 1；
//   掩掉的位置分数为 -∞、权重为 0；整行被遮住的查询，权重全为 0（不是 NaN）。
(function () {
  "use strict";

  // q、k：(n, d_k) 的二维数组；opts：{scale, temperature, causal, pad}
  function attentionWeights(q, k, opts) {
    const n = q.length, dk = q[0].length;
    const c = (opts.scale ? 1 / Math.sqrt(dk) : 1) / opts.temperature;
    return q.map((qi, i) => {
      // 这个查询能看哪些键：因果掩码挡住 j > i，填充挡住最后一个键
      const visible = k.map((_, j) => !(opts.causal && j > i) && !(opts.pad && j === n - 1));
      const scores = k.map((kj, j) => visible[j] ? dot(qi, kj) * c : -Infinity);
      return softmax(scores);
    });
  }

  function dot(a, b) {
    let s = 0;
    for (let t = 0; t < a.length; t++) s += a[t] * b[t];
    return s;
  }

  // 数值稳定的 softmax：先减去最大值；全是 -∞ 的行返回全 0
  function softmax(scores) {
    const max = Math.max(...scores);
    if (max === -Infinity) return scores.map(() => 0);
    const e = scores.map(s => Math.exp(s - max));
    const z = e.reduce((a, b) => a + b, 0);
    return e.map(x => x / z);
  }

  window.AttentionMath = { attentionWeights, softmax };
})();
