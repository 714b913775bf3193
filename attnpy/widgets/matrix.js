// attnpy.attention_matrix: the L x S table of scores or weights.
// Rows are queries, columns keys, numbered from 0 as Python indexes them.
// Click a row to highlight its query.

const MSTATE = ["causal"];

// The cell's colour: from the figure's background to blue; its text black
// or white, whichever contrasts more with that colour.
function heat(t, dark) {
  const c = Math.min(1, Math.max(0, t));
  const lo = dark ? [24, 24, 24] : [255, 255, 255], hi = dark ? [40, 140, 220] : [0, 114, 178];
  const rgb = lo.map((a, i) => Math.round(a + (hi[i] - a) * c));
  const L = luminance(rgb);
  return [`rgb(${rgb.join(",")})`, (1.05 / (L + 0.05)) > ((L + 0.05) / 0.055) ? "#ffffff" : "#111111"];
}

function indexLabel(parent, i, token) {
  htmlEl("span", {class: "attnpy-index"}, parent, String(i));
  parent.appendChild(document.createTextNode(" " + token));
}

function buildMatrix(root, model) {
  const m = {cells: [], sums: [], rows: []};
  const tokens = model.get("tokens"), n = tokens.length;
  const controls = htmlEl("div", {class: "attnpy-controls"}, root);
  m.show = toggleButton(controls, "show-toggle", () => {
    model.set("show", model.get("show") === "weights" ? "scores" : "weights"); model.save_changes();
  });
  m.causal = toggleButton(controls, "causal-toggle", () => {
    model.set("causal", !model.get("causal")); model.save_changes();
  });
  m.caption = htmlEl("p", {class: "attnpy-caption", "data-role": "view-label"}, root);
  const wrap = htmlEl("div", {class: "attnpy-scroll"}, root);
  const table = htmlEl("table", {class: "attnpy-table attnpy-matrix-table"}, wrap);
  const head = htmlEl("tr", {}, htmlEl("thead", {}, table));
  htmlEl("th", {scope: "col"}, head, "query ↓ key →");
  tokens.forEach((t, j) => indexLabel(htmlEl("th", {"data-col": j, scope: "col"}, head), j, t));
  m.sumHead = htmlEl("th", {scope: "col", "data-role": "row-sum-head"}, head, "row sum");
  const body = htmlEl("tbody", {}, table);
  for (let i = 0; i < n; i++) {
    const tr = htmlEl("tr", {"data-role": "row", "data-row": i}, body);
    const label = htmlEl("th", {"data-role": "row-label", "data-row": i, tabindex: 0, scope: "row",
      role: "button", "aria-label": `row ${i}: query ${tokens[i]}`, "data-lm-suppress-shortcuts": "true"}, tr);
    indexLabel(label, i, tokens[i]);
    label.addEventListener("keydown", (e) => {     // keyboard: Enter or Space picks the row
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); tr.click(); }
    });
    m.cells.push(tokens.map((_, j) => htmlEl("td", {"data-role": "cell", "data-row": i, "data-col": j}, tr)));
    m.sums.push(htmlEl("td", {"data-role": "row-sum", "data-row": i}, tr));
    tr.addEventListener("click", () => {
      model.set("row", model.get("row") === i ? null : i); model.save_changes();
    });
    m.rows.push(tr);
  }
  m.note = htmlEl("p", {"data-role": "row-note", class: "attnpy-caption"}, root);
  m.lines = statusLines(root);
  return m;
}

function matrixNumbers(model) {
  return computeMatrix({_inputs: model.get("_inputs"), causal: model.get("causal")});
}

function drawMatrix(root, m, model) {
  const got = numbersFor(model, MSTATE, matrixNumbers);
  const nums = got.numbers;
  const show = model.get("show"), causal = model.get("causal"), row = model.get("row");
  const tokens = model.get("tokens"), dark = root.classList.contains("attnpy-dark");
  const weights = show === "weights";
  const data = (weights ? nums._weights : nums._scores) || [];
  const sums = nums._weight_sums || [];
  const allowed = nums._allowed || [];
  root.setAttribute("data-source", got.source);
  setPressed(m.show, !weights, weights ? "showing: softmax weights" : "showing: scores before the softmax");
  setPressed(m.causal, causal, causal ? "causal mask: on" : "causal mask: off");
  // colour scale: weights 0..1; scores from the smallest to the largest shown
  let lo = 0, hi = 1;
  if (!weights) {
    const shown = data.flatMap((r, i) => r.filter((_, j) => allowed[i] && allowed[i][j]));
    lo = Math.min(...shown); hi = Math.max(...shown);
    if (!(hi > lo)) hi = lo + 1;
  }
  m.caption.textContent = (weights
    ? "softmax weights: each row is a distribution over the keys, so it sums to 1"
    : `scores the softmax sees (${model.get("caption")}); a row of scores has no meaningful sum`)
    + (causal ? (weights ? "; masked cells get weight 0" : "; masked cells are −∞ (a key after the query)") : "");
  m.cells.forEach((cells, i) => cells.forEach((td, j) => {
    const ok = allowed[i] && allowed[i][j];
    const v = (data[i] || [])[j];
    td.textContent = v === undefined ? "" : ok ? fmt3(v) : weights ? fmt3(0) : "−∞";
    td.classList.toggle("attnpy-blocked", !ok);
    const [bg, fg] = ok && v !== undefined ? heat((v - lo) / (hi - lo), dark) : ["", ""];
    td.style.background = bg; td.style.color = fg;
  }));
  m.sumHead.hidden = !weights;
  m.sums.forEach((td, i) => {
    td.hidden = !weights;
    td.textContent = weights && sums[i] !== undefined ? fmt3(sums[i]) : "";
  });
  m.rows.forEach((tr, i) => {
    tr.setAttribute("data-selected", row === i ? "true" : "false");
    tr.classList.toggle("attnpy-selected", row === i);
  });
  if (row === null || row === undefined || !data[row]) {
    m.note.textContent = "Click a row to highlight its query (rows and columns are numbered from 0, as Python indexes them).";
  } else {
    const vals = data[row].map((v, j) => (allowed[row][j] ? v : -Infinity));
    const best = vals.indexOf(Math.max(...vals));
    m.note.textContent = `query "${tokens[row]}" (row ${row}) attends most to key "${tokens[best]}" `
      + `(column ${best}): ${weights ? "weight" : "score"} ${fmt3(data[row][best])}`;
  }
  showSource(m.lines, got.source);
  const w = nums._weights || [];
  if (row !== null && row !== undefined && w[row]) announceTop(m.lines, tokens, w[row], `row ${row} "${tokens[row]}": `);
  else m.lines.announce.textContent = "";
}

function render({model, el}) {
  const root = figureRoot(el, "matrix", model.get("size"));
  const m = buildMatrix(root, model);
  const draw = () => drawMatrix(root, m, model);
  root.redraw = draw;
  draw();
  return redrawOn(model, ["show", "causal", "row", "_numbers"], draw, root);
}

export default { render };
