// softmax 饱和部件的数学部分（测试读的是这里算出的数）。与读者代码 snippets/softmax.py 相同：
//   p = softmax(z)（先减去最大值），J = diag(p) − p pᵀ，‖J‖₂ = J 的最大特征值（J 对称半正定）。
(function () {
  "use strict";

  function softmax(z) {
    const max = Math.max(...z);
    const e = z.map(x => Math.exp(x - max));
    const sum = e.reduce((a, b) => a + b, 0);
    return e.map(x => x / sum);
  }

  function jacobian(p) {
    return p.map((pi, i) => p.map((pj, j) => (i === j ? pi : 0) - pi * pj));
  }

  // 对称矩阵的全部特征值：循环 Jacobi 旋转，直到非对角元平方和可以忽略
  function symmetricEigenvalues(matrix) {
    const a = matrix.map(row => row.slice());
    const n = a.length;
    for (let sweep = 0; sweep < 100; sweep++) {
      let off = 0;
      for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) off += a[i][j] * a[i][j];
      if (off < 1e-300) break;
      for (let p = 0; p < n; p++) {
        for (let q = p + 1; q < n; q++) {
          if (a[p][q] === 0) continue;
          const theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
          const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
          const c = 1 / Math.sqrt(t * t + 1), s = t * c;
          for (let k = 0; k < n; k++) {          // 列 p、q 转过 θ
            const akp = a[k][p], akq = a[k][q];
            a[k][p] = c * akp - s * akq;
            a[k][q] = s * akp + c * akq;
          }
          for (let k = 0; k < n; k++) {          // 行 p、q 转过 θ
            const apk = a[p][k], aqk = a[q][k];
            a[p][k] = c * apk - s * aqk;
            a[q][k] = s * apk + c * aqk;
          }
        }
      }
    }
    return a.map((row, i) => row[i]);
  }

  // 一行分数的 softmax、最大权重和 ‖J‖₂
  function saturation(z) {
    const p = softmax(z);
    const eig = symmetricEigenvalues(jacobian(p));
    return { p, max: Math.max(...p), jacobian_norm: Math.max(...eig.map(Math.abs)) };
  }

  window.SaturationMath = { softmax, jacobian, symmetricEigenvalues, saturation };
})();
