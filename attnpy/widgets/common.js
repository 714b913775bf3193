// attnpy figures: helpers shared by playground.js and matrix.js.
// Plain ES module text, no build step, no network. Every element a test or
// a teacher's script needs carries a stable data-role attribute.

const SVG_NS = "http://www.w3.org/2000/svg";

// Okabe-Ito colours (distinguishable with every common colour-vision
// deficiency): vermillion ("copper") query, bluish-green ("teal") output,
// blue keys, orange highlight.
const COLOR = {
  query: "#D55E00", output: "#009E73", key: "#0072B2", highlight: "#E69F00",
  ink: "#222222", faint: "#9a9a9a", grid: "#e4e4e4",
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

// The figure's root: `size` (px) sets the width; the text scales with it.
function figureRoot(el, kind, size) {
  el.innerHTML = "";
  const root = htmlEl("div", {class: `attnpy-fig attnpy-${kind}`}, el);
  root.style.setProperty("--attnpy-size", `${size}px`);
  root.style.fontSize = `${Math.max(11, size / 44)}px`;
  return root;
}

// Redraw whenever one of `names` changes on the model; returns the cleanup.
function redrawOn(model, names, draw) {
  for (const n of names) model.on(`change:${n}`, draw);
  return () => { for (const n of names) model.off(`change:${n}`, draw); };
}
