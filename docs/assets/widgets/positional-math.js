// 位置编码部件的数学部分（测试读的是这里算出的数）。与读者代码 snippets/positional.py 相同：
//   ω_i = exp(−ln(b)·2i/d)，PE[p, 2i] = sin(pω_i)，PE[p, 2i+1] = cos(pω_i)；
//   RoPE 把第 i 对 (x_{2i}, x_{2i+1}) 转过 pθ_i，θ_i = ω_i。
(function () {
  "use strict";

  function frequencies(d, base) {
    return Array.from({ length: d / 2 }, (_, i) => Math.exp(-Math.log(base) * (2 * i) / d));
  }

  // PE(p)，(d,)：交错排列，偶数维 sin、奇数维 cos
  function encoding(p, omega) {
    return omega.flatMap(w => [Math.sin(p * w), Math.cos(p * w)]);
  }

  // PE(p)·PE(j)，j = 0 … positions−1
  function gramRow(p, positions, omega) {
    const row = encoding(p, omega);
    return Array.from({ length: positions }, (_, j) =>
      encoding(j, omega).reduce((sum, v, k) => sum + v * row[k], 0));
  }

  // 第 i 对转过 pθ_i 之后的两个数
  function rotatePair(x0, x1, angle) {
    const c = Math.cos(angle), s = Math.sin(angle);
    return [x0 * c - x1 * s, x0 * s + x1 * c];
  }

  function state(data, p, base, pair) {
    const omega = frequencies(data.d, base);
    const x = [data.x[2 * pair], data.x[2 * pair + 1]];
    const angle = p * omega[pair];
    return {
      omega, pe: encoding(p, omega), gram: gramRow(p, data.positions, omega),
      angle, wavelength: 2 * Math.PI / omega[pair], pair: x, rotated: rotatePair(x[0], x[1], angle),
    };
  }

  window.PositionalMath = { frequencies, encoding, gramRow, rotatePair, state };
})();
