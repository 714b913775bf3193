"""The anywidget classes. Imported only when a figure is made, so that
``import attnpy`` never imports anywidget.

The browser sends what the reader changed (the query, the toggles, the
clicked row); Python recomputes with attnpy and syncs the numbers back
with the state they belong to (``_numbers["_for"]``), so in a live kernel every number
on screen is attnpy's. While the numbers for the state drawn have not come
(the kernel is busy, restarted or gone), the browser computes them with
the same formulas and says so (common.js).
"""
import numpy as np

from .._deps import require

anywidget, t = require("attnpy's interactive figures", ("anywidget", "traitlets"),
                       extra="widget")

from . import _model, _page, _snapshot  # noqa: E402


class _Base(anywidget.AnyWidget):
    """What every figure shares: a text form with its numbers, and a static
    snapshot shown where the live figure cannot be (nbconvert, GitHub, a
    notebook opened without its kernel)."""

    def __repr__(self):
        return self._text()

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        if isinstance(data, tuple):          # (data, metadata)
            data = data[0]
        data["text/plain"] = self._text()
        return data

    def _ipython_display_(self):
        # Two outputs: the snapshot first, then the live view. nbconvert
        # renders a live view from the stored widget state only (a script
        # from the network, nothing offline), so the snapshot must be an
        # output of its own; in a live front end the figures' style sheet
        # hides it as soon as a live figure renders.
        from IPython.display import display
        display({"text/html": self._snapshot(), "text/plain": self._text()}, raw=True)
        display(self._repr_mimebundle_(), raw=True)


class _Figure(_Base):
    """What the playground and the matrix share: their numbers as float64
    arrays."""

    @property
    def scores(self):
        """The scores: the playground's ``q . k`` per key; the matrix's
        scores before the softmax (and before the causal mask)."""
        return np.array(self._scores)

    @property
    def weights(self):
        """The attention weights (softmax of the scaled, masked scores)."""
        return np.array(self._weights)


class Playground(_Figure):
    """The 2-D query/key figure (see :func:`attnpy.playground`)."""

    _esm = t.Unicode(_page.esm("playground")).tag(sync=True)
    _css = t.Unicode(_page.css()).tag(sync=True)
    tokens = t.List(t.Unicode()).tag(sync=True)
    _extras = t.List(t.List(t.Float())).tag(sync=True)
    key_xy = t.List(t.List(t.Float())).tag(sync=True)
    query = t.Tuple(t.Float(), t.Float(), default_value=(1.0, 0.5)).tag(sync=True)
    scaled = t.Bool(True).tag(sync=True)
    dim = t.Int(2).tag(sync=True)
    size = t.Int(640).tag(sync=True)
    dims = t.List(t.Int(), default_value=list(_model.DIMS)).tag(sync=True)
    # every number of the figure and the state it is for, in one synced
    # value: a front end that sends traits one by one cannot show numbers
    # of two states at once
    _numbers = t.Dict().tag(sync=True)

    def __init__(self, **kwargs):
        self._hidden = _model.extra_coordinates(len(kwargs["key_xy"]))
        super().__init__(_extras=self._hidden.tolist(), **kwargs)
        self._update()

    @t.validate("query")
    def _check_query(self, proposal):
        x, y = proposal["value"]
        if not (np.isfinite(x) and np.isfinite(y)):
            raise t.TraitError(f"playground: query must be finite, got {(x, y)}")
        return (float(x), float(y))

    @t.validate("dim")
    def _check_dim(self, proposal):
        d = proposal["value"]
        if not 2 <= d <= _model.MAX_DIM:
            raise t.TraitError(f"playground: dim must be in 2..{_model.MAX_DIM}, got {d}")
        return d

    @t.observe("query", "scaled", "dim", "key_xy")
    def _changed(self, change):
        self._update()

    def _update(self):
        s = _model.playground_state(self.query, self.key_xy, self._hidden,
                                    self.scaled, self.dim)
        self._scores, self._scaled_scores = s["scores"], s["scaled_scores"]
        self._scale, self._weights = s["scale"], s["weights"]
        self._output, self._demo = s["output"], s["demo"]
        self._plane_scores, self._rest_scores = s["plane_scores"], s["rest_scores"]
        self._numbers = {"_" + k: v for k, v in s.items()} | {"_for": {
            "query": list(self.query), "scaled": self.scaled, "dim": self.dim,
            "key_xy": self.key_xy}}

    @property
    def inputs(self):
        """(Q, K, V) of the current state: what ``explain`` is given."""
        return _model.lift(self.query, self.key_xy, self._hidden, self.dim)

    @property
    def output(self):
        """The output's plane position: the weighted mean of the keys."""
        return np.array(self._output)

    def save_html(self, path):
        """Write the figure as one self-contained page (no kernel needed)."""
        state = {"tokens": self.tokens, "key_xy": self.key_xy,
                 "query": list(self.query), "scaled": self.scaled,
                 "dim": self.dim, "size": self.size, "dims": self.dims,
                 "_extras": self._extras}
        return _page.write(path, "playground", state, "attnpy playground")

    def _text(self):
        q, d = self.query, self.dim
        how = f"scale 1/√{d} on" if self.scaled else "scale off"
        rows = [[tok, f"{p:.3f}", f"{r:.3f}", f"{s:.3f}", f"{c:.3f}", f"{w:.3f}"]
                for tok, p, r, s, c, w in zip(self.tokens, self._plane_scores, self._rest_scores,
                                              self._scores, self._scaled_scores, self._weights)]
        table = _snapshot.table_text(["key", "plane", "rest", "score", "scaled", "weight"], rows)
        o = self._output
        return (f"attnpy.playground: query ({q[0]:.2f}, {q[1]:.2f}), d = {d}, {how}\n{table}\n"
                f"output (V = K): ({o[0]:.3f}, {o[1]:.3f})")

    def _snapshot(self):
        extent = max(4.4, float(np.ceil((np.abs(np.concatenate(
            [np.ravel(self.key_xy), self.query])).max() + 0.6) * 2) / 2))
        svg = _snapshot.playground_svg(self.key_xy, self.tokens, self.query, self._weights,
                                       self._output, extent)
        rows = [[tok, f"{s:.3f}", f"{c:.3f}", f"{w:.3f}"] for tok, s, c, w in
                zip(self.tokens, self._scores, self._scaled_scores, self._weights)]
        roles = [["", "", "", f' data-role="weight" data-token="{_snapshot._e(tok)}"']
                 for tok in self.tokens]
        q = self.query
        title = (f"attnpy.playground, a snapshot (the live figure needs a kernel or a saved "
                 f"page): query ({q[0]:.2f}, {q[1]:.2f}), d = {self.dim}, scale "
                 f"{'on' if self.scaled else 'off'}")
        body = ("<div style=\"display: flex; flex-wrap: wrap; gap: 12px; align-items: "
                "flex-start\">" + svg + _snapshot.table(["key", "score q·k", "scaled", "weight"],
                                                         rows, roles) + "</div>")
        return _snapshot.wrap("playground", title, body)


class AttentionMatrix(_Figure):
    """The attention-matrix figure (see :func:`attnpy.attention_matrix`)."""

    _esm = t.Unicode(_page.esm("matrix")).tag(sync=True)
    _css = t.Unicode(_page.css()).tag(sync=True)
    tokens = t.List(t.Unicode()).tag(sync=True)
    causal = t.Bool(False).tag(sync=True)
    show = t.Unicode("weights").tag(sync=True)
    row = t.Int(None, allow_none=True).tag(sync=True)
    size = t.Int(560).tag(sync=True)
    caption = t.Unicode("").tag(sync=True)
    _inputs = t.Dict().tag(sync=True)
    _numbers = t.Dict().tag(sync=True)           # as the playground's

    def __init__(self, inputs, **kwargs):
        self._qkv = inputs
        Q, K, V, scale = inputs
        super().__init__(_inputs={"Q": Q.tolist(), "K": K.tolist(), "scale": scale}, **kwargs)
        self._update()

    @t.validate("show")
    def _check_show(self, proposal):
        if proposal["value"] not in ("weights", "scores"):
            raise t.TraitError('attention_matrix: show must be "weights" or '
                               f'"scores", got {proposal["value"]!r}')
        return proposal["value"]

    @t.validate("row")
    def _check_row(self, proposal):
        r, n = proposal["value"], len(self.tokens)
        if r is not None and not 0 <= r < n:
            raise t.TraitError(f"attention_matrix: row must be None or in 0..{n - 1}, got {r}")
        return r

    @t.observe("causal")
    def _changed(self, change):
        self._update()

    def _update(self):
        s = _model.matrix_state(*self._qkv, self.causal)
        self._scores, self._weights = s["scores"], s["weights"]
        self._allowed, self._weight_sums = s["allowed"], s["weight_sums"]
        self._numbers = {"_" + k: v for k, v in s.items()} | {"_for": {"causal": self.causal}}

    @property
    def inputs(self):
        """(Q, K, V, scale) given to ``explain``."""
        return self._qkv

    def save_html(self, path):
        """Write the figure as one self-contained page (no kernel needed)."""
        state = {"tokens": self.tokens, "causal": self.causal,
                 "show": self.show, "row": self.row, "size": self.size,
                 "caption": self.caption, "_inputs": self._inputs}
        return _page.write(path, "matrix", state, "attnpy attention matrix")

    def _cells(self):
        """The shown table as text: 3 decimals, -inf where masked."""
        data = self.weights if self.show == "weights" else self.scores
        ok = np.array(self._allowed)
        return [[f"{v:.3f}" if ok[i, j] else ("0.000" if self.show == "weights" else "−∞")
                 for j, v in enumerate(r)] for i, r in enumerate(data)]

    def _header(self):
        return [f"{i} {tok}" for i, tok in enumerate(self.tokens)]

    def _view(self):
        mask = ", causal mask on" if self.causal else ""
        if self.show == "weights":
            return f"softmax weights{mask} (each row sums to 1)"
        return f"scores the softmax sees, {self.caption}{mask}"

    def _text(self):
        rows = [[h] + r for h, r in zip(self._header(), self._cells())]
        row = "" if self.row is None else f"; row {self.row} ({self.tokens[self.row]}) highlighted"
        return (f"attnpy.attention_matrix: {self._view()}{row}\n"
                + _snapshot.table_text(["query \\ key"] + self._header(), rows))

    def _snapshot(self):
        rows = [[h] + r for h, r in zip(self._header(), self._cells())]
        roles = [[""] + [f' data-role="cell" data-row="{i}" data-col="{j}"'
                         for j in range(len(self.tokens))] for i in range(len(self.tokens))]
        title = f"attnpy.attention_matrix, a snapshot: {self._view()}"
        return _snapshot.wrap("matrix", title, _snapshot.table(
            ["query ↓ key →"] + self._header(), rows, roles))


class HeadView(_Base):
    """A model's attention heads (see :func:`attnpy.head_view`)."""

    _esm = t.Unicode(_page.esm("heads")).tag(sync=True)
    _css = t.Unicode(_page.css()).tag(sync=True)
    tokens = t.List(t.Unicode()).tag(sync=True)
    shape = t.List(t.Int()).tag(sync=True)
    layer = t.Int(0).tag(sync=True)
    head = t.Int(None, allow_none=True).tag(sync=True)
    causal = t.Bool(False).tag(sync=True)
    size = t.Int(720).tag(sync=True)
    _data = t.Unicode("").tag(sync=True)
    _dtype = t.Unicode("float64").tag(sync=True)

    def __init__(self, weights, **kwargs):
        import base64
        self._w = weights
        w = np.ascontiguousarray(weights, dtype=weights.dtype.newbyteorder("<"))
        super().__init__(shape=list(weights.shape), _dtype=str(weights.dtype),
                         _data=base64.b64encode(w.tobytes()).decode("ascii"), **kwargs)

    @t.validate("layer")
    def _check_layer(self, proposal):
        v, n = proposal["value"], self.shape[0]
        if not 0 <= v < n:
            raise t.TraitError(f"head_view: layer must be in 0..{n - 1}, got {v}")
        return v

    @t.validate("head")
    def _check_head(self, proposal):
        v, n = proposal["value"], self.shape[1]
        if v is not None and not 0 <= v < n:
            raise t.TraitError(f"head_view: head must be None or in 0..{n - 1}, got {v}")
        return v

    @property
    def weights(self):
        """The weights given, shape (layers, heads, T, T) (read-only)."""
        return self._w

    def save_html(self, path):
        """Write the figure as one self-contained page (no kernel needed)."""
        state = {"tokens": self.tokens, "shape": self.shape, "layer": self.layer,
                 "head": self.head, "causal": self.causal, "size": self.size,
                 "_data": self._data, "_dtype": self._dtype}
        return _page.write(path, "heads", state, "attnpy head view")

    def _where(self):
        L, H, T, _ = self.shape
        which = "all heads" if self.head is None else f"head {self.head}"
        return f"{L} layers x {H} heads, {T} tokens; layer {self.layer}, {which}"

    def _text(self):
        w, tok = self._w[self.layer], [_snapshot.label(s) for s in self.tokens]
        T = len(tok)
        lines = [f"attnpy.head_view: {self._where()}"]
        if self.head is not None and T <= 12:
            names = [f"{i} {s}" for i, s in enumerate(tok)]
            rows = [[names[i]] + [f"{v:.3f}" for v in w[self.head, i]] for i in range(T)]
            lines.append(_snapshot.table_text(["query \\ key"] + names, rows))
        else:
            heads = range(w.shape[0]) if self.head is None else [self.head]
            lines.append("the three largest weights of each query:")
            for i in range(T):
                pairs = sorted(((float(w[h, i, j]), j, h) for h in heads for j in range(T)),
                               reverse=True)[:3]
                lines.append(f"  {i} {tok[i]!r}: " + ", ".join(
                    f"{j} {tok[j]!r} {v:.3f}" + ("" if self.head is not None else f" (head {h})")
                    for v, j, h in pairs))
        return "\n".join(lines)

    def _snapshot(self):
        w = self._w[self.layer] if self.head is None else self._w[self.layer, self.head]
        title = (f"attnpy.head_view, a snapshot (hover and the pickers need the live figure "
                 f"or a saved page): {self._where()}")
        return _snapshot.wrap("heads", title, _snapshot.head_svg(self.tokens, w, title))
