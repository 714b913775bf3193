// attnpy.head_view: a model's attention weights, layer by layer, head by
// head. Queries on the left, keys on the right, a line per (query, key) as
// opaque as its weight. Hover (or focus) a token: a query shows where it
// attends, a key what attends to it. Everything is in the browser: the
// weights were given, nothing is computed, so no kernel is needed.

const HEAD_COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
  "#8C564B", "#332288", "#117733", "#AA4499", "#882255", "#44AA99"];
const ROW = 22, TOP = 14, HFONT = 14;

// a token as a label: a newline or tab in it shown, not laid out
function label(tok) { return tok.replace(/\n/g, "↵").replace(/\t/g, "⇥"); }

function decodeWeights(model) {
  const bin = atob(model.get("_data"));
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return model.get("_dtype") === "float32" ? new Float32Array(bytes.buffer) : new Float64Array(bytes.buffer);
}

function buildHeads(root, model, data) {
  const [L, H, T] = model.get("shape"), tokens = model.get("tokens");
  const v = {lines: [], numbers: [], tokens: {query: [], key: []}, focus: null};
  const controls = htmlEl("div", {class: "attnpy-controls"}, root);
  const layerLabel = htmlEl("label", {}, controls, "layer ");
  v.layer = htmlEl("select", {"data-role": "layer"}, layerLabel);
  for (let l = 0; l < L; l++) htmlEl("option", {value: l}, v.layer, String(l));
  const headLabel = htmlEl("label", {}, controls, "head ");
  v.head = htmlEl("select", {"data-role": "head"}, headLabel);
  htmlEl("option", {value: "all"}, v.head, `all ${H}, overlaid`);
  for (let h = 0; h < H; h++) htmlEl("option", {value: h}, v.head, String(h));
  v.causal = toggleButton(controls, "causal-toggle", () => {
    model.set("causal", !model.get("causal")); model.save_changes();
  });
  v.layer.addEventListener("change", () => { model.set("layer", parseInt(v.layer.value, 10)); model.save_changes(); });
  v.head.addEventListener("change", () => {
    model.set("head", v.head.value === "all" ? null : parseInt(v.head.value, 10)); model.save_changes();
  });
  v.caption = htmlEl("p", {class: "attnpy-caption", "data-role": "view-label"}, root);
  const width = Math.max(...tokens.map((t, i) => `${i} ${label(t)}`.length)) * 0.62 * HFONT + 8;
  // room for the hovered token's numbers (3 decimals) outside each column
  v.xq = 52 + width, v.xk = v.xq + 170;
  const W = v.xk + width + 52, Hpx = TOP + ROW * T + 6;
  v.svg = svgEl("svg", {viewBox: `0 0 ${W} ${Hpx}`, class: "attnpy-heads-svg", role: "group",
    "aria-label": "queries on the left, keys on the right; a line per pair, as opaque as its weight"}, root);
  v.svg.style.maxWidth = `${W * 1.4}px`;
  v.lineLayer = svgEl("g", {}, v.svg);
  for (const side of ["query", "key"]) {
    tokens.forEach((tok, i) => {
      const x = side === "query" ? v.xq - 6 : v.xk + 6;
      const node = svgEl("text", {x, y: TOP + ROW * i + HFONT / 2 + 4, "font-size": HFONT, fill: COLOR.ink,
        "text-anchor": side === "query" ? "end" : "start", class: "attnpy-token", tabindex: 0,
        role: "button", "data-role": "token", "data-lm-suppress-shortcuts": "true", "data-index": i, "data-side": side,
        "aria-label": `${side} ${i}: ${label(tok)}`}, v.svg);
      node.textContent = `${i} ${label(tok)}`;
      const on = () => { v.focus = {side, index: i}; v.redraw(); };
      node.addEventListener("mouseenter", on);
      node.addEventListener("focus", on);
      const off = () => { if (v.focus && v.focus.side === side && v.focus.index === i) { v.focus = null; v.redraw(); } };
      node.addEventListener("mouseleave", off);
      node.addEventListener("blur", off);
      v.tokens[side].push(node);
      // the hovered token's weights, written beside the other side's tokens
      const num = svgEl("text", {x: side === "query" ? 4 : W - 4, y: TOP + ROW * i + HFONT / 2 + 4,
        "font-size": HFONT - 2, fill: COLOR.ink, "text-anchor": side === "query" ? "start" : "end",
        "data-role": "weight-label", "data-side": side, "data-index": i}, v.svg);
      v.numbers.push(num);
    });
  }
  v.note = htmlEl("p", {class: "attnpy-caption", "data-role": "causal-note"}, root);
  v.lines_ = statusLines(root);
  v.data = data;
  return v;
}

function weightAt(v, model, l, h, i, j) {
  const [, H, T, S] = model.get("shape");
  return v.data[((l * H + h) * T + i) * S + j];
}

function drawLines(v, model) {
  const [, H, T] = model.get("shape"), l = model.get("layer"), head = model.get("head");
  const heads = head === null || head === undefined ? [...Array(H).keys()] : [head];
  const key = `${l}/${heads.join(",")}`;
  if (v.drawn === key) return;
  v.drawn = key;
  v.lineLayer.innerHTML = "";
  v.lines = [];
  for (const h of heads) {
    const color = heads.length > 1 ? HEAD_COLORS[h % HEAD_COLORS.length] : COLOR.key;
    for (let i = 0; i < T; i++) {
      for (let j = 0; j < T; j++) {
        const w = weightAt(v, model, l, h, i, j);
        const line = svgEl("line", {x1: v.xq, y1: TOP + ROW * i + HFONT / 2, x2: v.xk,
          y2: TOP + ROW * j + HFONT / 2, stroke: color, "stroke-width": 2,
          "stroke-opacity": Math.min(1, w / Math.sqrt(heads.length)).toFixed(4),
          "data-role": "weight", "data-layer": l, "data-head": h, "data-row": i, "data-col": j,
          "aria-label": fmt3(w)}, v.lineLayer);
        v.lines.push({line, h, i, j, w});
      }
    }
  }
}

function drawHeads(v, model) {
  const [L, H, T] = model.get("shape"), tokens = model.get("tokens");
  const l = model.get("layer"), head = model.get("head"), causal = model.get("causal");
  const all = head === null || head === undefined;
  v.layer.value = String(l);
  v.head.value = all ? "all" : String(head);
  setPressed(v.causal, causal, causal ? "causal triangle: shown" : "causal triangle: off");
  drawLines(v, model);
  const f = v.focus;
  for (const {line, i, j} of v.lines) {
    const show = !f || (f.side === "query" ? i === f.index : j === f.index);
    line.setAttribute("visibility", show ? "visible" : "hidden");
    line.setAttribute("stroke-dasharray", causal && j > i ? "3 3" : "none");
  }
  // the numbers beside the other side's tokens: one head only (overlaid
  // heads give one line each, their weights in the lines' aria-labels)
  v.numbers.forEach((n) => { n.textContent = ""; });
  const sideNums = v.numbers;
  if (f && !all) {
    for (let k = 0; k < T; k++) {
      const [i, j] = f.side === "query" ? [f.index, k] : [k, f.index];
      const w = weightAt(v, model, l, head, i, j);
      const node = sideNums[(f.side === "query" ? T : 0) + k];
      node.textContent = fmt3(w);
      setAttrs(node, {"data-layer": l, "data-head": head, "data-row": i, "data-col": j});
    }
  }
  v.tokens.query.concat(v.tokens.key).forEach((n) => n.setAttribute("font-weight",
    f && n.getAttribute("data-side") === f.side && +n.getAttribute("data-index") === f.index ? "700" : "400"));
  v.caption.textContent = `layer ${l} of 0–${L - 1}, ${all ? `all ${H} heads overlaid (a colour a head)` : `head ${head} of 0–${H - 1}`}: `
    + "queries on the left, keys on the right; hover or focus a token to see where it attends, or what attends to it.";
  if (causal) {
    const heads = all ? [...Array(H).keys()] : [head];
    let above = 0, total = 0;
    for (const h of heads) for (let i = 0; i < T; i++) for (let j = 0; j < T; j++) {
      const w = weightAt(v, model, l, h, i, j);
      total += w; if (j > i) above += w;
    }
    v.note.textContent = "Causal triangle: dashed lines go to keys after their query, which a causal "
      + `model masks. Here they hold ${fmt3(total ? above / total : 0)} of the weight`
      + (above === 0 ? " (none: these weights are causal)." : " (not 0: this model sees later tokens).");
  } else v.note.textContent = "";
  v.lines_.source.textContent = "The weights given to head_view, drawn as they are (nothing is computed, no kernel needed).";
  if (f) {
    const heads = all ? [...Array(H).keys()] : [head];
    const pairs = [];
    for (const h of heads) for (let k = 0; k < T; k++) {
      const w = f.side === "query" ? weightAt(v, model, l, h, f.index, k) : weightAt(v, model, l, h, k, f.index);
      pairs.push([w, k, h]);
    }
    pairs.sort((a, b) => b[0] - a[0]);
    const what = f.side === "query" ? `query ${f.index} "${label(tokens[f.index])}" attends most to`
      : `key ${f.index} "${label(tokens[f.index])}" is attended most by`;
    v.lines_.announce.textContent = `${what}: ` + pairs.slice(0, 3).map(([w, k, h]) =>
      `${k} "${label(tokens[k])}" ${fmt3(w)}${all ? ` (head ${h})` : ""}`).join(", ");
  } else v.lines_.announce.textContent = "";
}

function render({model, el}) {
  const root = figureRoot(el, "heads", model.get("size"));
  const v = buildHeads(root, model, decodeWeights(model));
  v.redraw = () => drawHeads(v, model);
  v.redraw();
  return redrawOn(model, ["layer", "head", "causal"], v.redraw, root);
}

export default { render };
