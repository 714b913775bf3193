// attnpy.playground: keys in a plane, a draggable query, the weights.
// It draws what the model holds; the numbers (_scores, _weights, ...) come
// from attnpy in a kernel, or from compute.js on a saved page.

const VIEW = 400, UNIT = 200 / 4.4;          // plane coordinates -4.4 .. 4.4
const LIMIT = 4.2;                            // how far the query may go
let figureCount = 0;

function toPx(x, y) { return [VIEW / 2 + x * UNIT, VIEW / 2 - y * UNIT]; }

function round2(v) {
  return Math.round(Math.min(LIMIT, Math.max(-LIMIT, v)) * 100) / 100;
}

function drawGrid(plane) {
  const g = svgEl("g", {class: "attnpy-grid"}, plane);
  for (let v = -4; v <= 4; v++) {
    const [a] = toPx(v, 0), [, b] = toPx(0, v);
    const axis = v === 0 ? COLOR.faint : COLOR.grid;
    svgEl("line", {x1: a, y1: 0, x2: a, y2: VIEW, stroke: axis}, g);
    svgEl("line", {x1: 0, y1: b, x2: VIEW, y2: b, stroke: axis}, g);
  }
}

function buildPlane(parent, n) {
  const id = `attnpy-head-${++figureCount}`;
  const plane = svgEl("svg", {viewBox: `0 0 ${VIEW} ${VIEW}`, class: "attnpy-plane",
    role: "img", "aria-label": "query and keys in the plane"}, parent);
  const defs = svgEl("defs", {}, plane);
  const marker = svgEl("marker", {id, viewBox: "0 0 10 10", refX: 10, refY: 5,
    markerWidth: 9, markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto"}, defs);
  svgEl("path", {d: "M0,0 L10,5 L0,10 z", fill: COLOR.key}, marker);
  drawGrid(plane);
  const p = {plane, arrows: [], keys: [], labels: []};
  p.qvec = svgEl("line", {stroke: COLOR.query, "stroke-width": 1.5}, plane);
  p.ovec = svgEl("line", {stroke: COLOR.output, "stroke-width": 2, "stroke-dasharray": "6 4"}, plane);
  for (let j = 0; j < n; j++) {
    p.arrows.push(svgEl("line", {stroke: COLOR.key, "stroke-opacity": 0.55,
      "marker-end": `url(#${id})`, "data-role": "arrow"}, plane));
  }
  for (let j = 0; j < n; j++) {
    p.keys.push(svgEl("rect", {width: 12, height: 12, fill: COLOR.key, "data-role": "key"}, plane));
    p.labels.push(svgEl("text", {class: "attnpy-label", fill: COLOR.ink}, plane));
  }
  p.output = svgEl("circle", {r: 7, fill: COLOR.output, stroke: "#ffffff",
    "stroke-width": 2, "data-role": "output"}, plane);
  p.query = svgEl("circle", {r: 10, fill: COLOR.query, stroke: "#ffffff", "stroke-width": 2,
    tabindex: 0, "data-role": "query", class: "attnpy-query",
    "aria-label": "query: drag it, or use the arrow keys"}, plane);
  p.olabel = svgEl("text", {class: "attnpy-label", fill: COLOR.output}, plane);
  p.qlabel = svgEl("text", {class: "attnpy-label attnpy-qlabel", fill: COLOR.query}, plane);
  return p;
}

function drawPlane(p, model) {
  const keys = model.get("key_xy"), tokens = model.get("tokens");
  const w = model.get("_weights") || [], out = model.get("_output") || [0, 0];
  const [qx, qy] = model.get("query");
  const [qa, qb] = toPx(qx, qy), [ox, oy] = toPx(0, 0), [pa, pb] = toPx(out[0], out[1]);
  keys.forEach(([kx, ky], j) => {
    const [a, b] = toPx(kx, ky);
    // the arrow stops at the key's edge; its width is the weight
    const dx = a - qa, dy = b - qb, len = Math.hypot(dx, dy) || 1, stop = Math.min(9, len);
    Object.entries({x1: qa, y1: qb, x2: a - dx / len * stop, y2: b - dy / len * stop,
      "stroke-width": 0.5 + 14 * (w[j] || 0), "data-token": tokens[j]})
      .forEach(([k, v]) => p.arrows[j].setAttribute(k, v));
    Object.entries({x: a - 6, y: b - 6, "data-token": tokens[j], "data-x": kx, "data-y": ky})
      .forEach(([k, v]) => p.keys[j].setAttribute(k, v));
    p.labels[j].setAttribute("x", a + 9);
    p.labels[j].setAttribute("y", b - 8);
    p.labels[j].textContent = tokens[j];
  });
  Object.entries({x1: ox, y1: oy, x2: qa, y2: qb}).forEach(([k, v]) => p.qvec.setAttribute(k, v));
  Object.entries({x1: ox, y1: oy, x2: pa, y2: pb}).forEach(([k, v]) => p.ovec.setAttribute(k, v));
  Object.entries({cx: pa, cy: pb, "data-x": out[0], "data-y": out[1]})
    .forEach(([k, v]) => p.output.setAttribute(k, v));
  Object.entries({cx: qa, cy: qb, "data-x": qx, "data-y": qy})
    .forEach(([k, v]) => p.query.setAttribute(k, v));
  p.olabel.setAttribute("x", pa + 9);
  p.olabel.setAttribute("y", pb + 16);
  p.olabel.textContent = "output";
  p.qlabel.setAttribute("x", qa + 12);
  p.qlabel.setAttribute("y", qb + 20);
  p.qlabel.textContent = `q (${qx.toFixed(2)}, ${qy.toFixed(2)})`;
}

// Dragging (pointer events, so mouse, pen and touch) and the arrow keys.
function bindQuery(p, model) {
  let dragging = false;
  const move = (x, y) => { model.set("query", [round2(x), round2(y)]); model.save_changes(); };
  const fromEvent = (e) => {
    const pt = p.plane.createSVGPoint();
    pt.x = e.clientX; pt.y = e.clientY;
    const s = pt.matrixTransform(p.plane.getScreenCTM().inverse());
    move((s.x - VIEW / 2) / UNIT, (VIEW / 2 - s.y) / UNIT);
  };
  p.plane.addEventListener("pointerdown", (e) => {
    dragging = true;
    p.plane.setPointerCapture(e.pointerId);
    p.query.focus();
    fromEvent(e);
    e.preventDefault();
  });
  p.plane.addEventListener("pointermove", (e) => { if (dragging) fromEvent(e); });
  const stop = (e) => {
    dragging = false;
    if (p.plane.hasPointerCapture(e.pointerId)) p.plane.releasePointerCapture(e.pointerId);
  };
  p.plane.addEventListener("pointerup", stop);
  p.plane.addEventListener("pointercancel", stop);
  p.query.addEventListener("keydown", (e) => {
    const step = e.shiftKey ? 0.5 : 0.1;
    const d = {ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, step], ArrowDown: [0, -step]}[e.key];
    if (!d) return;
    const [x, y] = model.get("query");
    move(x + d[0], y + d[1]);
    e.preventDefault();
  });
}

function buildSide(parent, model, n) {
  const s = {};
  const controls = htmlEl("div", {class: "attnpy-controls"}, parent);
  s.scale = toggleButton(controls, "scale-toggle", () => {
    model.set("scaled", !model.get("scaled")); model.save_changes();
  });
  const label = htmlEl("label", {}, controls, "head width d ");
  s.dim = htmlEl("select", {"data-role": "dim"}, label);
  s.dim.addEventListener("change", () => {
    model.set("dim", parseInt(s.dim.value, 10)); model.save_changes();
  });
  s.bars = svgEl("svg", {viewBox: `0 0 300 ${24 * n + 8}`, class: "attnpy-bars",
    role: "img", "aria-label": "attention weights"}, parent);
  s.bar = [], s.value = [], s.name = [];
  for (let j = 0; j < n; j++) {
    const y = 8 + 24 * j;
    s.name.push(svgEl("text", {x: 58, y: y + 13, "text-anchor": "end", class: "attnpy-label"}, s.bars));
    s.bar.push(svgEl("rect", {x: 64, y, height: 16, fill: COLOR.key}, s.bars));
    s.value.push(svgEl("text", {y: y + 13, class: "attnpy-label", "data-role": "weight"}, s.bars));
  }
  const table = htmlEl("table", {class: "attnpy-table"}, parent);
  s.caption = htmlEl("caption", {}, table);
  const head = htmlEl("tr", {}, htmlEl("thead", {}, table));
  ["key", "score q·k", "scaled", "weight"].forEach((t) => htmlEl("th", {}, head, t));
  const body = htmlEl("tbody", {}, table);
  s.rows = [];
  for (let j = 0; j < n; j++) {
    const tr = htmlEl("tr", {}, body);
    s.rows.push(["th", "td", "td", "td"].map((tag, c) =>
      htmlEl(tag, {"data-role": ["token", "score", "scaled-score", "weight-cell"][c]}, tr)));
  }
  return s;
}

function drawSide(s, model) {
  const tokens = model.get("tokens"), w = model.get("_weights") || [];
  const sc = model.get("_scores") || [], ss = model.get("_scaled_scores") || [];
  const scaled = model.get("scaled"), dim = model.get("dim"), scale = model.get("_scale");
  setPressed(s.scale, scaled, scaled ? "scale 1/√d: on" : "scale 1/√d: off");
  const dims = model.get("dims").includes(dim) ? model.get("dims") : [...model.get("dims"), dim];
  if (s.dim.options.length !== dims.length) {
    s.dim.innerHTML = "";
    dims.forEach((d) => htmlEl("option", {value: d}, s.dim, String(d)));
  }
  s.dim.value = String(dim);
  tokens.forEach((tok, j) => {
    const wj = w[j] || 0;
    s.name[j].textContent = tok;
    s.bar[j].setAttribute("width", 180 * wj);
    s.bar[j].setAttribute("data-token", tok);
    s.value[j].setAttribute("x", 68 + 180 * wj);
    s.value[j].setAttribute("data-token", tok);
    s.value[j].textContent = fmt3(wj);
    const cells = [tok, (sc[j] ?? 0).toFixed(3), (ss[j] ?? 0).toFixed(3), fmt3(wj)];
    s.rows[j].forEach((cell, c) => { cell.textContent = cells[c]; cell.setAttribute("data-token", tok); });
  });
  s.caption.textContent = scaled
    ? `d = ${dim}: scaled = score × 1/√${dim} = score × ${scale.toFixed(4)}`
    : `d = ${dim}: scale off, scaled = score × 1`;
}

function buildDemo(parent) {
  const box = htmlEl("div", {class: "attnpy-demo"}, parent);
  htmlEl("p", {}, box, "Head width d: each vector is its plane position followed by d − 2 fixed "
    + "random coordinates (standard normal). Scores spread like √d; without the scale the "
    + "softmax turns one-hot, and the largest gradient softmax's Jacobian diag(y) − y yᵀ sends "
    + "to any key but the argmax falls towards 0.");
  const table = htmlEl("table", {class: "attnpy-table"}, box);
  const head = htmlEl("tr", {}, htmlEl("thead", {}, table));
  ["d", "√d", "spread of the scores (std)", "top weight, scale off",
    "largest gradient to a non-argmax key: scale on", "scale off"].forEach((t) => htmlEl("th", {}, head, t));
  return {body: htmlEl("tbody", {}, table)};
}

function drawDemo(demo, model) {
  const rows = model.get("_demo") || [], dim = model.get("dim"), scaled = model.get("scaled");
  demo.body.innerHTML = "";
  for (const r of rows) {
    const tr = htmlEl("tr", {"data-role": "demo-row", "data-dim": r.dim}, demo.body);
    if (r.dim === dim) tr.classList.add("attnpy-current");
    htmlEl("th", {}, tr, String(r.dim));
    htmlEl("td", {}, tr, r.sqrt.toFixed(2));
    htmlEl("td", {"data-role": "spread"}, tr, r.spread.toFixed(2));
    htmlEl("td", {"data-role": "top-weight"}, tr, fmt3(r.max_unscaled));
    const on = htmlEl("td", {"data-role": "grad-scaled"}, tr, fmtSmall(r.grad_scaled));
    const off = htmlEl("td", {"data-role": "grad-unscaled"}, tr, fmtSmall(r.grad_unscaled));
    if (r.dim === dim) (scaled ? on : off).classList.add("attnpy-mark");
  }
}

function render({model, el}) {
  const n = model.get("tokens").length;
  const root = figureRoot(el, "playground", model.get("size"));
  const top = htmlEl("div", {class: "attnpy-top"}, root);
  const left = htmlEl("div", {class: "attnpy-left"}, top);
  const p = buildPlane(left, n);
  const legend = htmlEl("p", {class: "attnpy-caption"}, left);
  htmlEl("span", {style: `color:${COLOR.query}`}, legend, "● query q: drag it, or arrow keys. ");
  htmlEl("span", {style: `color:${COLOR.key}`}, legend, "■ keys k (arrow width = weight). ");
  htmlEl("span", {style: `color:${COLOR.output}`}, legend, "● output Σ weight·k (V = K).");
  const s = buildSide(htmlEl("div", {class: "attnpy-side"}, top), model, n);
  const demo = buildDemo(root);
  bindQuery(p, model);
  const draw = () => { drawPlane(p, model); drawSide(s, model); drawDemo(demo, model); };
  draw();
  return redrawOn(model, ["query", "scaled", "dim", "key_xy", "_weights", "_scores",
    "_scaled_scores", "_output", "_demo"], draw);
}

export default { render };
