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
  const e = state._extras, [qx, qy] = state.query;
  const q = [qx, qy, ...e[0].slice(0, dim - 2)];
  const K = state.key_xy.map((k, j) => [k[0], k[1], ...e[j + 1].slice(0, dim - 2)]);
  return [q, K];
}

function attendOne(q, K, V, scale) {
  const scores = K.map((k) => dot(q, k));
  // a score's two parts: the plane's coordinates and the other d - 2
  const plane = K.map((k) => q[0] * k[0] + q[1] * k[1]);
  const rest = K.map((k) => dot(q.slice(2), k.slice(2)));
  const scaled = scores.map((s) => s * scale);
  const weights = softmaxRow(scaled);
  const output = [0, 1].map((c) => weights.reduce((a, w, j) => a + w * V[j][c], 0));
  return {scores, plane, rest, scaled, weights, output};
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
      max_scaled: Math.max(...on.weights), max_unscaled: Math.max(...off.weights)};
  });
  return {_scores: now.scores, _scaled_scores: now.scaled, _weights: now.weights,
    _plane_scores: now.plane, _rest_scores: now.rest,
    _output: now.output, _scale: state.scaled ? 1 / Math.sqrt(state.dim) : 1, _demo: demo};
}

export function computeMatrix(state) {
  const {Q, K} = state._inputs, causal = state.causal;
  const scale = state._inputs.scale === null ? 1 / Math.sqrt(Q[0].length) : state._inputs.scale;
  const scores = Q.map((q) => K.map((k) => dot(q, k) * scale));
  const allowed = scores.map((r, i) => r.map((_, j) => !causal || j <= i));
  const weights = scores.map((r, i) => softmaxRow(r, allowed[i]));
  const rowSum = (r) => r.reduce((a, v) => a + v, 0);
  return {_scores: scores, _weights: weights, _allowed: allowed, _weight_sums: weights.map(rowSum)};
}

// the head view's saved page: the weights are the page's data, nothing to compute
export function computeNothing() { return {}; }
