// 梯度随距离部件的数学部分（测试读的是这里算出的数）。与读者代码相同：
//   tanh RNN（snippets/rnn.py）：h_t = tanh(ρQ h_{t−1} + x_t)，h_0 = 0；
//     ∂h_T/∂h_{T−k} = ∏ diag(1 − h²) W_hh（gradient_norms 的同一个连乘）。
//   LSTM（snippets/lstm.py）：门 i, f, g, o，c_t = f ⊙ c_{t−1} + i ⊙ g，h_t = o ⊙ tanh(c_t)；
//     ∂c_T/∂c_{T−k} 按 cell_state_jacobians 的定义：起点 h = o ⊙ tanh(c)（o 固定），之后逐步连乘
//     状态 (h, c) 的 2d × 2d 雅可比矩阵；直接路径是 ∏ diag(f)。
// 谱范数 = √(JᵀJ 的最大特征值)，特征值用 SaturationMath.symmetricEigenvalues（先除以最大元素，防止下溢）。
(function () {
  "use strict";

  const sigmoid = z => 1 / (1 + Math.exp(-z));
  const matvec = (m, v) => m.map(row => row.reduce((s, a, j) => s + a * v[j], 0));
  const matmul = (a, b) => a.map(row => b[0].map((_, j) => row.reduce((s, v, k) => s + v * b[k][j], 0)));

  function spectralNorm(j) {
    const scale = Math.max(...j.flat().map(Math.abs));
    if (scale === 0) return 0;
    const m = j.map(row => row.map(v => v / scale));
    const gram = m[0].map((_, a) => m[0].map((_, b) => m.reduce((s, row) => s + row[a] * row[b], 0)));  // mᵀm
    return scale * Math.sqrt(Math.max(...window.SaturationMath.symmetricEigenvalues(gram)));
  }

  // ‖∂h_T/∂h_{T−k}‖₂，k = 1 … kMax
  function rnnNorms(data, rho) {
    const d = data.d, w = data.q.map(row => row.map(v => rho * v));
    const hs = [];
    let h = new Array(d).fill(0);
    for (const x of data.x) {
      h = matvec(w, h).map((z, i) => Math.tanh(z + x[i]));
      hs.push(h);
    }
    const T = hs.length - 1, norms = [];
    let jac = w.map((_, i) => w.map((_, j) => (i === j ? 1 : 0)));
    for (let k = 1; k <= data.k_max; k++) {
      const factor = w.map((row, i) => row.map(v => (1 - hs[T - k + 1][i] ** 2) * v));   // diag(1 − h²) W
      jac = matmul(jac, factor);
      norms.push(spectralNorm(jac));
    }
    return norms;
  }

  // 一步 LSTM：门、新状态，以及 (h', c') 对 (h, c) 的 2d × 2d 雅可比矩阵
  function lstmStep(p, x, h, c) {
    const d = h.length;
    const z = matvec(p.w_ih, x).map((v, r) => v + matvec([p.w_hh[r]], h)[0] + p.b[r]);
    const i = z.slice(0, d).map(sigmoid), f = z.slice(d, 2 * d).map(sigmoid);
    const g = z.slice(2 * d, 3 * d).map(Math.tanh), o = z.slice(3 * d).map(sigmoid);
    const cNew = c.map((cv, r) => f[r] * cv + i[r] * g[r]);
    const tc = cNew.map(Math.tanh), hNew = o.map((ov, r) => ov * tc[r]);
    const jac = Array.from({ length: 2 * d }, () => new Array(2 * d).fill(0));
    for (let r = 0; r < d; r++) {
      const back = o[r] * (1 - tc[r] ** 2);                                   // ∂h'_r/∂c'_r
      for (let s = 0; s < d; s++) {
        const dcdh = c[r] * f[r] * (1 - f[r]) * p.w_hh[d + r][s]              // 经 f
          + g[r] * i[r] * (1 - i[r]) * p.w_hh[r][s]                            // 经 i
          + i[r] * (1 - g[r] ** 2) * p.w_hh[2 * d + r][s];                     // 经 g
        jac[d + r][s] = dcdh;                                                  // ∂c'/∂h
        jac[r][s] = tc[r] * o[r] * (1 - o[r]) * p.w_hh[3 * d + r][s] + back * dcdh;  // ∂h'/∂h：经 o 与经 c'
      }
      jac[d + r][d + r] = f[r];                                                // ∂c'/∂c = diag(f)
      jac[r][d + r] = back * f[r];                                             // ∂h'/∂c
    }
    return { h: hNew, c: cNew, f, o, jac };
  }

  // ‖∂c_T/∂c_{T−k}‖₂，完整路径与直接路径，k = 1 … kMax
  function lstmNorms(data, forgetBias) {
    const d = data.d, n = data.x.length;
    const p = { w_ih: data.w_ih, w_hh: data.w_hh, b: data.b.map((v, r) => (r >= d && r < 2 * d ? forgetBias : v)) };
    const steps = [];
    let h = new Array(d).fill(0), c = new Array(d).fill(0);
    for (const x of data.x) {
      const s = lstmStep(p, x, h, c);
      steps.push(s);
      h = s.h;
      c = s.c;
    }
    const full = [], direct = [];
    let prod = null;                      // ∏ 从最后一步往回的 2d × 2d 状态雅可比
    let f = new Array(d).fill(1);
    for (let k = 1; k <= data.k_max; k++) {
      const step = steps[n - k];          // 第 n − k 步（0 起算）：从 (h_{n−k}, c_{n−k}) 到下一个状态
      prod = prod ? matmul(prod, step.jac) : step.jac;
      f = f.map((v, r) => v * step.f[r]);
      const start = steps[n - k - 1];     // 起点 c_{n−k} 由这一步产生：h = o ⊙ tanh(c)，o 固定
      const dh = start.c.map((cv, r) => start.o[r] * (1 - Math.tanh(cv) ** 2));
      // (prod · [diag(dh); I]) 的 c 行：∂c_T/∂c_{T−k}
      const jac = prod.slice(d).map(row => row.slice(0, d).map((v, s) => v * dh[s] + row[d + s]));
      full.push(spectralNorm(jac));
      direct.push(Math.max(...f.map(Math.abs)));
    }
    return { full, direct };
  }

  window.GradientsMath = { spectralNorm, rnnNorms, lstmStep, lstmNorms };
})();
