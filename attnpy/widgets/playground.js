// attnpy.playground: keys in a plane, a draggable query, the weights.
// It draws what the model holds; the numbers (_scores, _weights, ...) come
// from attnpy in a kernel, or from compute.js on a saved page and whenever
// the kernel has not answered for the state drawn (common.js: numbersFor).

const VIEW = 400, FONT = 16, PAD = 0.6;
const STATE = ["query", "scaled", "dim", "key_xy"];
let figureCount = 0;

// The plane shows -R..R on both axes: at least -4.4..4.4, wider when a key
// or the query lies further out, so that every point is drawn.
function extentOf(keys, query) {
  const far = Math.max(4.4 - PAD, ...keys.flat().map(Math.abs), ...query.map(Math.abs));
  return Math.ceil((far + PAD) * 2) / 2;
}

function toPx(p, x, y) {
  const unit = VIEW / 2 / p.R;
  return [VIEW / 2 + x * unit, VIEW / 2 - y * unit];
}

function drawGrid(p) {
  p.grid.innerHTML = "";
  const step = p.R <= 10 ? 1 : Math.pow(10, Math.floor(Math.log10(p.R / 2)));
  for (let v = -Math.floor(p.R / step) * step; v <= p.R; v += step) {
    const [a] = toPx(p, v, 0), [, b] = toPx(p, 0, v);
    const axis = Math.abs(v) < 1e-9 ? COLOR.faint : COLOR.grid;
    svgEl("line", {x1: a, y1: 0, x2: a, y2: VIEW, stroke: axis}, p.grid);
    svgEl("line", {x1: 0, y1: b, x2: VIEW, y2: b, stroke: axis}, p.grid);
  }
  setAttrs(p.extent, {"data-extent": p.R});
  p.extent.textContent = `axes −${p.R} … ${p.R}`;
}

function buildPlane(parent, n) {
  const id = `attnpy-head-${++figureCount}`;
  const plane = svgEl("svg", {viewBox: `0 0 ${VIEW} ${VIEW}`, class: "attnpy-plane", role: "group",
    "aria-label": "the plane: the query and the keys"}, parent);
  const defs = svgEl("defs", {}, plane);
  const marker = svgEl("marker", {id, viewBox: "0 0 10 10", refX: 10, refY: 5,
    markerWidth: 9, markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto"}, defs);
  svgEl("path", {d: "M0,0 L10,5 L0,10 z", fill: COLOR.key}, marker);
  const p = {plane, R: 0, arrows: [], halos: [], keys: [], labels: []};
  p.grid = svgEl("g", {class: "attnpy-grid", "aria-hidden": "true"}, plane);
  p.extent = svgEl("text", {x: VIEW - 4, y: VIEW - 5, "text-anchor": "end", "font-size": 10,
    fill: "var(--attnpy-muted)", "data-role": "extent", "aria-hidden": "true"}, plane);
  p.qvec = svgEl("line", {stroke: COLOR.query, "stroke-width": 1.5}, plane);
  p.ovec = svgEl("line", {stroke: COLOR.output, "stroke-width": 2, "stroke-dasharray": "6 4"}, plane);
  for (let j = 0; j < n; j++) {
    p.arrows.push(svgEl("line", {stroke: COLOR.key, "stroke-opacity": 0.55,
      "marker-end": `url(#${id})`, "data-role": "arrow"}, plane));
    // a ring round the key, as thick as its weight, when the query sits on
    // the key and its arrow is too short to see
    p.halos.push(svgEl("circle", {r: 13, fill: "none", stroke: COLOR.key, "stroke-opacity": 0.55,
      "data-role": "halo"}, plane));
  }
  // the query under the keys (half transparent), so a key it covers shows
  p.query = svgEl("circle", {r: 10, fill: COLOR.query, "fill-opacity": 0.8, stroke: COLOR.bg,
    "stroke-width": 2, tabindex: 0, "data-role": "query", class: "attnpy-query", role: "slider",
    "aria-label": "query q", "aria-roledescription": "point in the plane",
    "aria-orientation": "horizontal",
    // Lumino (JupyterLab, Notebook 7) handles keys before the page does:
    // this attribute leaves the arrow keys to the query
    "data-lm-suppress-shortcuts": "true"}, plane);
  for (let j = 0; j < n; j++) {
    p.keys.push(svgEl("rect", {width: 12, height: 12, fill: COLOR.key, stroke: COLOR.bg,
      "stroke-width": 1.5, "data-role": "key"}, plane));
  }
  p.output = svgEl("circle", {r: 7, fill: COLOR.output, stroke: COLOR.bg,
    "stroke-width": 2, "data-role": "output"}, plane);
  for (let j = 0; j < n; j++) {
    p.labels.push(svgEl("text", {class: "attnpy-label", "font-size": FONT, fill: COLOR.ink,
      "data-role": "plane-label"}, plane));
  }
  p.olabel = svgEl("text", {class: "attnpy-label", "font-size": FONT, fill: COLOR.output,
    "data-role": "plane-label"}, plane);
  p.qlabel = svgEl("text", {class: "attnpy-label attnpy-qlabel", "font-size": FONT,
    fill: COLOR.query, "data-role": "plane-label"}, plane);
  return p;
}

function textWidth(node) {
  let w = 0;
  try { w = node.getComputedTextLength(); } catch (e) { w = 0; }
  return w > 0 ? w : 0.62 * FONT * node.textContent.length;
}

function drawPlane(p, model, nums) {
  const keys = model.get("key_xy"), tokens = model.get("tokens");
  const w = nums._weights || [], out = nums._output || [0, 0];
  const [qx, qy] = model.get("query");
  const R = extentOf(keys, [qx, qy]);
  if (R !== p.R) { p.R = R; drawGrid(p); }
  const [qa, qb] = toPx(p, qx, qy), [ox, oy] = toPx(p, 0, 0), [pa, pb] = toPx(p, out[0], out[1]);
  const marks = [];
  keys.forEach(([kx, ky], j) => {
    const [a, b] = toPx(p, kx, ky);
    // the arrow stops at the key's edge; its width is the weight
    const dx = a - qa, dy = b - qb, len = Math.hypot(dx, dy) || 1, stop = Math.min(9, len);
    const width = 0.5 + 14 * (w[j] || 0);
    setAttrs(p.arrows[j], {x1: qa, y1: qb, x2: a - dx / len * stop, y2: b - dy / len * stop,
      "stroke-width": width, "data-token": tokens[j]});
    setAttrs(p.halos[j], {cx: a, cy: b, "stroke-width": width, "data-token": tokens[j],
      visibility: Math.hypot(dx, dy) < 18 ? "visible" : "hidden"});
    setAttrs(p.keys[j], {x: a - 6, y: b - 6, "data-token": tokens[j], "data-x": kx, "data-y": ky});
    p.labels[j].textContent = tokens[j];
    marks.push({x: a - 7, y: b - 7, w: 14, h: 14});
  });
  setAttrs(p.qvec, {x1: ox, y1: oy, x2: qa, y2: qb});
  setAttrs(p.ovec, {x1: ox, y1: oy, x2: pa, y2: pb});
  setAttrs(p.output, {cx: pa, cy: pb, "data-x": out[0], "data-y": out[1]});
  const lim = extentOf(keys, [0, 0]) - PAD;
  setAttrs(p.query, {cx: qa, cy: qb, "data-x": qx, "data-y": qy, "aria-valuenow": qx,
    "aria-valuemin": -lim, "aria-valuemax": lim,
    "aria-valuetext": `x ${qx.toFixed(2)}, y ${qy.toFixed(2)}`});
  marks.push({x: qa - 11, y: qb - 11, w: 22, h: 22}, {x: pa - 8, y: pb - 8, w: 16, h: 16});
  p.olabel.textContent = "output";
  p.qlabel.textContent = `q (${qx.toFixed(2)}, ${qy.toFixed(2)})`;
  const item = (node, x, y, r) => ({x, y, r, w: textWidth(node), h: FONT + 2,
    place: (box) => setAttrs(node, {x: box.x, y: box.y + FONT})});
  const items = keys.map(([kx, ky], j) => item(p.labels[j], ...toPx(p, kx, ky), 8));
  items.push(item(p.qlabel, qa, qb, 11), item(p.olabel, pa, pb, 8));
  placeLabels(items, marks, {x: 0, y: 0, w: VIEW, h: VIEW});
}

// Dragging (pointer events, so mouse, pen and touch) and the arrow keys.
function bindQuery(p, model) {
  let dragging = false;
  // the reader drags within the keys' plane (extentOf with the query at
  // the origin): a query dragged to the edge must not widen the plane
  // under the pointer
  const clampRound = (v) => {
    const lim = extentOf(model.get("key_xy"), [0, 0]) - PAD;
    return Math.round(Math.min(lim, Math.max(-lim, v)) * 100) / 100;
  };
  const move = (x, y) => { model.set("query", [clampRound(x), clampRound(y)]); model.save_changes(); };
  const fromEvent = (e) => {
    const pt = p.plane.createSVGPoint();
    pt.x = e.clientX; pt.y = e.clientY;
    const s = pt.matrixTransform(p.plane.getScreenCTM().inverse());
    const unit = VIEW / 2 / p.R;
    move((s.x - VIEW / 2) / unit, (VIEW / 2 - s.y) / unit);
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

const COLUMNS = [
  ["key", "token"], ["plane: qx·kx + qy·ky", "plane-score"], ["rest: the other d − 2 coordinates", "rest-score"],
  ["score q·k", "score"], ["scaled score", "scaled-score"], ["weight", "weight-cell"]];

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
    role: "img", "aria-label": "bar chart of the attention weights (the table gives them)"}, parent);
  s.bar = [], s.value = [], s.name = [];
  for (let j = 0; j < n; j++) {
    const y = 8 + 24 * j;
    s.name.push(svgEl("text", {x: 70, y: y + 13, "text-anchor": "end", class: "attnpy-label",
      "font-size": FONT, fill: COLOR.ink}, s.bars));
    s.bar.push(svgEl("rect", {x: 76, y, height: 16, fill: COLOR.key}, s.bars));
    s.value.push(svgEl("text", {y: y + 13, class: "attnpy-label", "font-size": FONT, fill: COLOR.ink,
      "data-role": "weight"}, s.bars));
  }
  return s;
}

function buildTable(parent, n) {
  const wrap = htmlEl("div", {class: "attnpy-scroll"}, parent);
  const table = htmlEl("table", {class: "attnpy-table attnpy-numbers"}, wrap);
  const t = {table, rows: []};
  t.caption = htmlEl("caption", {}, table);
  const head = htmlEl("tr", {}, htmlEl("thead", {}, table));
  COLUMNS.forEach(([text]) => htmlEl("th", {scope: "col"}, head, text));
  const body = htmlEl("tbody", {}, table);
  for (let j = 0; j < n; j++) {
    const tr = htmlEl("tr", {}, body);
    t.rows.push(COLUMNS.map(([, role], c) => htmlEl(c ? "td" : "th", {"data-role": role}, tr)));
  }
  return t;
}

function drawSide(s, t, model, nums) {
  const tokens = model.get("tokens"), w = nums._weights || [];
  const sc = nums._scores || [], ss = nums._scaled_scores || [];
  const pl = nums._plane_scores || [], rest = nums._rest_scores || [];
  const scaled = model.get("scaled"), dim = model.get("dim"), scale = nums._scale;
  setPressed(s.scale, scaled, scaled ? "scale 1/√d: on" : "scale 1/√d: off");
  const dims = model.get("dims").includes(dim) ? model.get("dims") : [...model.get("dims"), dim];
  if (s.dim.options.length !== dims.length) {
    s.dim.innerHTML = "";
    dims.forEach((d) => htmlEl("option", {value: d}, s.dim, String(d)));
  }
  s.dim.value = String(dim);
  const longest = Math.max(...tokens.map((tok) => tok.length));
  const barX = Math.min(120, 14 + 8 * longest);
  tokens.forEach((tok, j) => {
    const wj = w[j] || 0;
    s.name[j].textContent = tok;
    s.name[j].setAttribute("x", barX - 6);
    setAttrs(s.bar[j], {x: barX, width: (240 - barX) * wj, "data-token": tok});
    setAttrs(s.value[j], {x: barX + 4 + (240 - barX) * wj, "data-token": tok});
    s.value[j].textContent = fmt3(wj);
    const cells = [tok, fmt3(pl[j] ?? 0), fmt3(rest[j] ?? 0), fmt3(sc[j] ?? 0), fmt3(ss[j] ?? 0), fmt3(wj)];
    t.rows[j].forEach((cell, c) => { cell.textContent = cells[c]; cell.setAttribute("data-token", tok); });
  });
  t.caption.textContent = (dim === 2
    ? "d = 2: the plane is the whole vector, the rest is 0. "
    : `d = ${dim}: score = plane part + rest; the rest comes from the ${dim - 2} coordinates `
      + "the plane cannot draw, so the weights need not follow the plane. ")
    + (scaled ? `scaled = score × 1/√${dim} = score × ${scale.toFixed(4)}; ` : "scale off: scaled = score; ")
    + "weight = softmax of the scaled scores.";
}

function buildDemo(parent) {
  const box = htmlEl("div", {class: "attnpy-demo"}, parent);
  htmlEl("p", {}, box, "Head width d: each vector is its plane position followed by d − 2 fixed "
    + "random coordinates (standard normal, the same every time), which the plane does not "
    + "draw: the table above shows their part of each score. Scores spread like √d; without "
    + "the scale the softmax turns one-hot, and the largest gradient softmax's Jacobian "
    + "diag(y) − y yᵀ sends to any key but the argmax falls towards 0. For the current query:");
  const wrap = htmlEl("div", {class: "attnpy-scroll"}, box);
  const table = htmlEl("table", {class: "attnpy-table"}, wrap);
  const head = htmlEl("tr", {}, htmlEl("thead", {}, table));
  ["d", "√d", "spread of the scores (std)", "top weight, scale on", "top weight, scale off",
    "largest gradient to a non-argmax key, scale on", "the same, scale off"]
    .forEach((text) => htmlEl("th", {scope: "col"}, head, text));
  return {body: htmlEl("tbody", {}, table)};
}

function drawDemo(demo, model, nums) {
  const rows = nums._demo || [], dim = model.get("dim"), scaled = model.get("scaled");
  demo.body.innerHTML = "";
  for (const r of rows) {
    const tr = htmlEl("tr", {"data-role": "demo-row", "data-dim": r.dim}, demo.body);
    if (r.dim === dim) tr.classList.add("attnpy-current");
    htmlEl("th", {}, tr, String(r.dim));
    htmlEl("td", {}, tr, r.sqrt.toFixed(2));
    htmlEl("td", {"data-role": "spread"}, tr, r.spread.toFixed(2));
    htmlEl("td", {"data-role": "top-weight-scaled"}, tr, fmt3(r.max_scaled));
    htmlEl("td", {"data-role": "top-weight"}, tr, fmt3(r.max_unscaled));
    const on = htmlEl("td", {"data-role": "grad-scaled"}, tr, fmtSmall(r.grad_scaled));
    const off = htmlEl("td", {"data-role": "grad-unscaled"}, tr, fmtSmall(r.grad_unscaled));
    if (r.dim === dim) (scaled ? on : off).classList.add("attnpy-mark");
  }
}

function browserNumbers(model) {
  return computePlayground({key_xy: model.get("key_xy"), query: model.get("query"),
    scaled: model.get("scaled"), dim: model.get("dim"), dims: model.get("dims"),
    _extras: model.get("_extras")});
}

function render({model, el}) {
  const n = model.get("tokens").length;
  const root = figureRoot(el, "playground", model.get("size"));
  const top = htmlEl("div", {class: "attnpy-top"}, root);
  const left = htmlEl("div", {class: "attnpy-left"}, top);
  const p = buildPlane(left, n);
  const legend = htmlEl("p", {class: "attnpy-caption"}, left);
  htmlEl("span", {class: "attnpy-c-query"}, legend, "● query q: drag it, or arrow keys. ");
  htmlEl("span", {class: "attnpy-c-key"}, legend, "■ keys k (arrow width = weight). ");
  htmlEl("span", {class: "attnpy-c-output"}, legend, "● output Σ weight·k (V = K).");
  const s = buildSide(htmlEl("div", {class: "attnpy-side"}, top), model, n);
  const lines = statusLines(root);
  const t = buildTable(root, n);
  const demo = buildDemo(root);
  bindQuery(p, model);
  const draw = () => {
    const got = numbersFor(model, STATE, browserNumbers);
    const nums = got.numbers;
    root.setAttribute("data-source", got.source);
    drawPlane(p, model, nums); drawSide(s, t, model, nums); drawDemo(demo, model, nums);
    showSource(lines, got.source);
    announceTop(lines, model.get("tokens"), nums._weights || [], "");
  };
  draw();
  // labels are measured once the page has laid the figure out
  requestAnimationFrame(draw);
  return redrawOn(model, STATE.concat(["_numbers"]), draw, root);
}

export default { render };
