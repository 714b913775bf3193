"""The two anywidget classes. Imported only when a figure is made, so that
``import attnpy`` never imports anywidget.

The browser sends what the reader changed (the query, the toggles, the
clicked row); Python recomputes with attnpy and syncs the numbers back,
so in a live kernel every number on screen is attnpy's.
"""
import numpy as np

try:
    import anywidget
    import traitlets as t
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        "attnpy's interactive figures need anywidget: "
        'pip install "attnpy[widget]"') from exc

from . import _model, _page


class _Figure(anywidget.AnyWidget):
    """What both figures share: their numbers as float64 arrays."""

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
    key_xy = t.List(t.List(t.Float())).tag(sync=True)
    query = t.Tuple(t.Float(), t.Float(), default_value=(1.0, 0.5)).tag(sync=True)
    scaled = t.Bool(True).tag(sync=True)
    dim = t.Int(2).tag(sync=True)
    size = t.Int(640).tag(sync=True)
    dims = t.List(t.Int(), default_value=list(_model.DIMS)).tag(sync=True)
    _scores = t.List(t.Float()).tag(sync=True)
    _scaled_scores = t.List(t.Float()).tag(sync=True)
    _scale = t.Float(1.0).tag(sync=True)
    _weights = t.List(t.Float()).tag(sync=True)
    _output = t.List(t.Float()).tag(sync=True)
    _demo = t.List(t.Dict()).tag(sync=True)

    def __init__(self, **kwargs):
        self._extras = _model.extra_coordinates(len(kwargs["key_xy"]))
        super().__init__(**kwargs)
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
        s = _model.playground_state(self.query, self.key_xy, self._extras,
                                    self.scaled, self.dim)
        with self.hold_sync():
            self._scores, self._scaled_scores = s["scores"], s["scaled_scores"]
            self._scale, self._weights = s["scale"], s["weights"]
            self._output, self._demo = s["output"], s["demo"]

    @property
    def inputs(self):
        """(Q, K, V) of the current state: what ``explain`` is given."""
        return _model.lift(self.query, self.key_xy, self._extras, self.dim)

    @property
    def output(self):
        """The output's plane position: the weighted mean of the keys."""
        return np.array(self._output)

    def save_html(self, path):
        """Write the figure as one self-contained page (no kernel needed)."""
        state = {"tokens": self.tokens, "key_xy": self.key_xy,
                 "query": list(self.query), "scaled": self.scaled,
                 "dim": self.dim, "size": self.size, "dims": self.dims,
                 "extras": self._extras.tolist()}
        return _page.write(path, "playground", state, "attnpy playground")


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
    _scores = t.List(t.List(t.Float())).tag(sync=True)
    _weights = t.List(t.List(t.Float())).tag(sync=True)
    _allowed = t.List(t.List(t.Bool())).tag(sync=True)
    _score_sums = t.List(t.Float()).tag(sync=True)
    _weight_sums = t.List(t.Float()).tag(sync=True)

    def __init__(self, inputs, **kwargs):
        self._inputs = inputs
        super().__init__(**kwargs)
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
        s = _model.matrix_state(*self._inputs, self.causal)
        with self.hold_sync():
            self._scores, self._weights = s["scores"], s["weights"]
            self._allowed = s["allowed"]
            self._score_sums, self._weight_sums = s["score_sums"], s["weight_sums"]

    @property
    def inputs(self):
        """(Q, K, V, scale) given to ``explain``."""
        return self._inputs

    def save_html(self, path):
        """Write the figure as one self-contained page (no kernel needed)."""
        Q, K, V, scale = self._inputs
        state = {"tokens": self.tokens, "causal": self.causal,
                 "show": self.show, "row": self.row, "size": self.size,
                 "caption": self.caption, "Q": Q.tolist(), "K": K.tolist(),
                 "scale": scale}
        return _page.write(path, "matrix", state, "attnpy attention matrix")
