// attnpy.attention_matrix: the L x S table of scores or weights.
// Rows are queries, columns keys. Click a row to highlight its query.

function heat(t) {
  // white -> Okabe-Ito blue; text turns white on the dark half
  const c = Math.min(1, Math.max(0, t));
  const lo = [255, 255, 255], hi = [0, 114, 178];
  const rgb = lo.map((a, i) => Math.round(a + (hi[i] - a) * c));
  return [`rgb(${rgb.join(",")})`, c > 0.55 ? "#ffffff" : COLOR.ink];
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
  m.caption = htmlEl("p", {class: "attnpy-caption"}, root);
  const table = htmlEl("table", {class: "attnpy-table attnpy-matrix-table"}, root);
  const head = htmlEl("tr", {}, htmlEl("thead", {}, table));
  htmlEl("th", {}, head, "query ↓ key →");
  tokens.forEach((t, j) => htmlEl("th", {"data-col": j}, head, t));
  htmlEl("th", {}, head, "row sum");
  const body = htmlEl("tbody", {}, table);
  for (let i = 0; i < n; i++) {
    const tr = htmlEl("tr", {"data-role": "row", "data-row": i}, body);
    const label = htmlEl("th", {"data-role": "row-label", "data-row": i, tabindex: 0}, tr, tokens[i]);
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
  return m;
}

function drawMatrix(m, model) {
  const show = model.get("show"), causal = model.get("causal"), row = model.get("row");
  const tokens = model.get("tokens");
  const data = model.get(show === "weights" ? "_weights" : "_scores") || [];
  const sums = model.get(show === "weights" ? "_weight_sums" : "_score_sums") || [];
  const allowed = model.get("_allowed") || [];
  setPressed(m.show, show === "scores", show === "weights" ? "showing: softmax weights" : "showing: raw scores");
  setPressed(m.causal, causal, causal ? "causal mask: on" : "causal mask: off");
  // colour scale: weights 0..1; scores from the smallest to the largest shown
  let lo = 0, hi = 1;
  if (show === "scores") {
    const shown = data.flatMap((r, i) => r.filter((_, j) => allowed[i] && allowed[i][j]));
    lo = Math.min(...shown); hi = Math.max(...shown);
    if (!(hi > lo)) hi = lo + 1;
  }
  m.caption.textContent = (show === "weights"
    ? "softmax weights: each row is a distribution over the keys"
    : "scores before the softmax") + (model.get("caption") ? ` (${model.get("caption")})` : "")
    + (causal ? "; masked cells blanked" : "");
  m.cells.forEach((cells, i) => cells.forEach((td, j) => {
    const ok = allowed[i] && allowed[i][j];
    const v = (data[i] || [])[j];
    td.textContent = ok && v !== undefined ? fmt3(v) : "";
    td.classList.toggle("attnpy-blocked", !ok);
    const [bg, fg] = ok && v !== undefined ? heat((v - lo) / (hi - lo)) : ["#eeeeee", COLOR.faint];
    td.style.background = bg; td.style.color = fg;
  }));
  m.sums.forEach((td, i) => { td.textContent = sums[i] === undefined ? "" : fmt3(sums[i]); });
  m.rows.forEach((tr, i) => {
    tr.setAttribute("data-selected", row === i ? "true" : "false");
    tr.classList.toggle("attnpy-selected", row === i);
  });
  if (row === null || row === undefined || !data[row]) {
    m.note.textContent = "Click a row to highlight its query.";
  } else {
    const vals = data[row].map((v, j) => (allowed[row][j] ? v : -Infinity));
    const best = vals.indexOf(Math.max(...vals));
    m.note.textContent = `query "${tokens[row]}" (row ${row + 1}) attends most to key "${tokens[best]}" `
      + `(column ${best + 1}): ${fmt3(data[row][best])}`;
  }
}

function render({model, el}) {
  const root = figureRoot(el, "matrix", model.get("size"));
  const m = buildMatrix(root, model);
  const draw = () => drawMatrix(m, model);
  draw();
  return redrawOn(model, ["show", "causal", "row", "_weights", "_scores", "_allowed",
    "_weight_sums", "_score_sums"], draw);
}

export default { render };
