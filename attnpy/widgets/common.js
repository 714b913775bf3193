// attnpy figures: helpers shared by playground.js, matrix.js and heads.js.
// Plain ES module text, no build step, no network. Every element a test or
// a teacher's script needs carries a stable data-role attribute.

const SVG_NS = "http://www.w3.org/2000/svg";

// Okabe-Ito colours (distinguishable with every common colour-vision
// deficiency): vermillion query, bluish-green output, blue keys, orange
// highlight. The figure reads them from CSS variables (widgets.css), which
// a dark theme lightens so that text keeps its contrast.
const COLOR = {
  query: "var(--attnpy-query)", output: "var(--attnpy-output)", key: "var(--attnpy-key)",
  highlight: "var(--attnpy-highlight)", ink: "var(--attnpy-ink)", faint: "var(--attnpy-faint)",
  grid: "var(--attnpy-grid)", bg: "var(--attnpy-bg)",
};

function svgEl(tag, attrs, parent) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}

function htmlEl(tag, attrs, parent, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

function setAttrs(node, attrs) {
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
}

function fmt3(x) { return Number(x).toFixed(3); }

// Gradients fall to 1e-30 and below: 3 significant digits, exponent when small.
function fmtSmall(x) {
  const a = Math.abs(x);
  if (a === 0) return "0";
  return a < 1e-3 ? x.toExponential(2) : x.toFixed(4);
}

// A button that shows its on/off state (aria-pressed) and a label.
function toggleButton(parent, role, onClick) {
  const b = htmlEl("button", {type: "button", "data-role": role, class: "attnpy-toggle"}, parent);
  b.addEventListener("click", onClick);
  return b;
}

function setPressed(button, on, label) {
  button.setAttribute("aria-pressed", on ? "true" : "false");
  button.textContent = label;
}

// --- the theme: dark when what lies behind the figure is dark -------------
// Front ends mark their themes differently (JupyterLab's body attribute,
// VS Code's body class, marimo's html class, the OS setting for a saved
// page); the colour actually painted behind the figure covers them all.
function luminance(rgb) {
  const c = rgb.map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
  return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
}

function parseColor(text) {
  const m = /rgba?\(([^)]+)\)/.exec(text || "");
  if (!m) return null;
  const p = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
  return {rgb: p.slice(0, 3), alpha: p.length > 3 ? p[3] : 1};
}

function backdropIsDark(el) {
  for (let n = el.parentElement; n; n = n.parentElement) {
    const c = parseColor(getComputedStyle(n).backgroundColor);
    if (c && c.alpha > 0.5) return luminance(c.rgb) < 0.2;
  }
  return !!(window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches);
}

// (a figure that paints colours itself, as the matrix's cells, sets
// root.redraw to repaint when the theme changes)
function followTheme(root) {
  const apply = () => {
    const dark = backdropIsDark(root);
    if (dark === root.classList.contains("attnpy-dark")) return;
    root.classList.toggle("attnpy-dark", dark);
    if (root.redraw) root.redraw();
  };
  apply();
  const obs = new MutationObserver(apply);
  for (const n of [document.documentElement, document.body]) {
    obs.observe(n, {attributes: true, attributeFilter: ["class", "data-theme", "data-jp-theme-light", "style"]});
  }
  const mq = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  if (mq && mq.addEventListener) mq.addEventListener("change", apply);
  return () => { obs.disconnect(); if (mq && mq.removeEventListener) mq.removeEventListener("change", apply); };
}

// --- the root: as wide as it may be, text scaled to the width it gets -----
// `size` (px) is the widest the figure grows; a narrower container gets a
// narrower figure, and the text follows the width actually drawn.
function figureRoot(el, kind, size) {
  el.innerHTML = "";
  const root = htmlEl("div", {class: `attnpy-fig attnpy-${kind}`}, el);
  root.style.setProperty("--attnpy-size", `${size}px`);
  const fit = () => {
    const w = root.getBoundingClientRect().width || size;
    root.style.fontSize = `${Math.max(11, Math.min(22, w / 44)).toFixed(1)}px`;
    root.classList.toggle("attnpy-narrow", w < 560);
  };
  fit();
  const ro = window.ResizeObserver ? new ResizeObserver(fit) : null;
  if (ro) ro.observe(root);
  const untheme = followTheme(root);
  root.cleanup = () => { if (ro) ro.disconnect(); untheme(); };
  return root;
}

// Redraw whenever one of `names` changes on the model; returns the cleanup.
function redrawOn(model, names, draw, root) {
  for (const n of names) model.on(`change:${n}`, draw);
  return () => {
    for (const n of names) model.off(`change:${n}`, draw);
    if (root && root.cleanup) root.cleanup();
  };
}

// --- where the numbers come from --------------------------------------------
// In a kernel, Python sends its numbers with `_for`, the state they were
// computed for. Whenever the state drawn is not that one (the kernel has
// not answered yet, or is gone after a restart), the figure computes the
// numbers itself with the formulas of compute.js, and says so.
const WAIT_MS = 2000;

function numbersFor(model, keyNames, compute) {
  const got = model.get("_numbers") || {};
  if (model.get("_source") === "page") return {numbers: got, source: "page"};
  const done = got._for;
  const same = done && keyNames.every((k) => JSON.stringify(done[k]) === JSON.stringify(model.get(k)));
  return same ? {numbers: got, source: "kernel"} : {numbers: compute(model), source: "browser"};
}

// A status line naming the source, and a polite live region for the top
// weights (screen readers read it as it changes).
function statusLines(parent) {
  const source = htmlEl("p", {class: "attnpy-status", "data-role": "source"}, parent);
  const announce = htmlEl("p", {class: "attnpy-announce", "data-role": "announce",
    "aria-live": "polite", role: "status"}, parent);
  return {source, announce, timer: null, shown: ""};
}

function showSource(lines, source, redraw) {
  clearTimeout(lines.timer);
  const say = (text, kind) => {
    lines.source.textContent = text;
    lines.source.setAttribute("data-source", kind);
  };
  if (source === "page") say("Saved page: the numbers are computed in this browser, with attnpy's formulas.", "page");
  else if (source === "kernel") say("Numbers from attnpy in the kernel.", "kernel");
  else {
    say("Numbers computed in this browser (attnpy's formulas); waiting for the kernel…", "browser");
    lines.timer = setTimeout(() => {
      say("The kernel does not answer (restarted or stopped?): the numbers are computed in this "
        + "browser, with attnpy's formulas. Run the cell again to reconnect.", "browser-disconnected");
      if (redraw) redraw();
    }, WAIT_MS);
  }
}

function announceTop(lines, tokens, weights, prefix, k = 3) {
  const order = weights.map((w, j) => [w, j]).sort((a, b) => b[0] - a[0]).slice(0, k);
  const text = `${prefix}top weights: ` + order.map(([w, j]) => `${tokens[j]} ${fmt3(w)}`).join(", ");
  if (text !== lines.shown) { lines.announce.textContent = text; lines.shown = text; }
}

// --- labels that avoid each other, the points and the edges -----------------
// Greedy: each label in turn takes the spot round its point that overlaps
// least with what is placed (boxes and point marks) and stays inside.
function overlap(a, b) {
  const w = Math.min(a.x + a.w, b.x + b.w) - Math.max(a.x, b.x);
  const h = Math.min(a.y + a.h, b.y + b.h) - Math.max(a.y, b.y);
  return w > 0 && h > 0 ? w * h : 0;
}

function placeLabels(items, obstacles, view) {
  const placed = [];
  for (const it of items) {
    const w = it.w, h = it.h, r = it.r;
    const spots = [[r, -r - h], [r, r], [-r - w, -r - h], [-r - w, r], [-w / 2, -r - h - 2],
      [-w / 2, r + 2], [r + 2, -h / 2], [-r - w - 2, -h / 2]];
    let best = null;
    for (let ring = 1; ring <= 4 && !(best && best.cost === 0); ring++) {
      for (const [dx, dy] of spots) {
        const box = {x: it.x + dx * ring, y: it.y + dy * ring, w, h};
        let cost = ring - 1;
        for (const o of placed.concat(obstacles)) cost += overlap(box, o) * 10;
        const out = Math.max(0, view.x - box.x) + Math.max(0, box.x + w - view.x - view.w)
          + Math.max(0, view.y - box.y) + Math.max(0, box.y + h - view.y - view.h);
        cost += out * 1000;
        if (!best || cost < best.cost) best = {cost, box};
      }
    }
    placed.push(best.box);
    it.place(best.box);
  }
  return placed;
}
