// The formulas of attnpy.explain, in float64 JavaScript, for saved pages
// (no kernel): scores = Q K^T, scaled = scores * scale (default 1/sqrt(E)),
// masked cells -inf, weights = softmax row by row, output = weights V.

function dot(a, b) {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

function softmaxRow(x, allowed) {
  const ok = x.map((_, j) => !allowed || allowed[j]);
  const m = Math.max(...x.filter((_, j) => ok[j]));
  if (!Number.isFinite(m)) return x.map(() => 0);   // no key visible: zeros
  const e = x.map((v, j) => (ok[j] ? Math.exp(v - m) : 0));
  const total = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / total);
}

function std(x) {
  const mean = x.reduce((a, b) => a + b, 0) / x.length;
  return Math.sqrt(x.reduce((a, v) => a + (v - mean) * (v - mean), 0) / x.length);
}

// max over i and over keys j != argmax of |J_ij|, J = diag(y) - y y^T
function nonargmaxGradient(y) {
  const top = y.indexOf(Math.max(...y));
  let g = 0;
  y.forEach((yj, j) => {
    if (j === top) return;
    y.forEach((yi, i) => { g = Math.max(g, Math.abs((i === j ? yi : 0) - yi * yj)); });
  });
  return g;
}

function lift(state, dim) {
  const e = state.extras, [qx, qy] = state.query;
  const q = [qx, qy, ...e[0].slice(0, dim - 2)];
  const K = state.key_xy.map((k, j) => [k[0], k[1], ...e[j + 1].slice(0, dim - 2)]);
  return [q, K];
}

function attendOne(q, K, V, scale) {
  const scores = K.map((k) => dot(q, k));
  const scaled = scores.map((s) => s * scale);
  const weights = softmaxRow(scaled);
  const output = [0, 1].map((c) => weights.reduce((a, w, j) => a + w * V[j][c], 0));
  return {scores, scaled, weights, output};
}

export function computePlayground(state) {
  const V = state.key_xy;
  const at = (dim, scaled) => {
    const [q, K] = lift(state, dim);
    return attendOne(q, K, V, scaled ? 1 / Math.sqrt(dim) : 1);
  };
  const now = at(state.dim, state.scaled);
  const demo = state.dims.map((d) => {
    const on = at(d, true), off = at(d, false);
    return {dim: d, spread: std(on.scores), sqrt: Math.sqrt(d),
      grad_scaled: nonargmaxGradient(on.weights), grad_unscaled: nonargmaxGradient(off.weights),
      max_unscaled: Math.max(...off.weights)};
  });
  return {_scores: now.scores, _scaled_scores: now.scaled, _weights: now.weights,
    _output: now.output, _scale: state.scaled ? 1 / Math.sqrt(state.dim) : 1, _demo: demo};
}

export function computeMatrix(state) {
  const {Q, K, causal} = state;
  const scale = state.scale === null ? 1 / Math.sqrt(Q[0].length) : state.scale;
  const scores = Q.map((q) => K.map((k) => dot(q, k) * scale));
  const allowed = scores.map((r, i) => r.map((_, j) => !causal || j <= i));
  const weights = scores.map((r, i) => softmaxRow(r, allowed[i]));
  const rowSum = (r, i) => r.reduce((a, v, j) => a + (allowed[i][j] ? v : 0), 0);
  return {_scores: scores, _weights: weights, _allowed: allowed,
    _score_sums: scores.map(rowSum), _weight_sums: weights.map(rowSum)};
}
