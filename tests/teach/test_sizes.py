"""Sizes a notebook survives: the HTML of a trace or a mask is shortened as
the text is, figures are at most 20 inches a side."""
import numpy as np
import pytest

import attnpy

MB = 1_000_000


def test_trace_html_is_shortened_like_the_text():
    X = np.random.default_rng(0).standard_normal((512, 8))
    tr = attnpy.explain(X, X, X)
    html = tr._repr_html_()
    assert len(html) <= 2 * MB
    assert "512 x 512, first and last rows/columns shown" in html
    assert len(str(tr)) <= 20_000
    heads = attnpy.explain(*(np.broadcast_to(X, (16, 512, 8)),) * 3)
    assert len(heads._repr_html_()) <= 2 * MB


def test_show_is_bounded_the_same_way():
    assert len(attnpy.show(attnpy.causal_mask(300))._repr_html_()) <= 2 * MB
    many = np.ones((16, 300, 300), bool)
    assert len(attnpy.show(many)._repr_html_()) <= 2 * MB
    assert len(str(attnpy.show(attnpy.causal_mask(300)))) <= 20_000


def test_show_titles_and_tokens():
    assert str(attnpy.show(np.eye(2))).splitlines()[0] == (
        "float64 array of 0 and 1 (as a mask: 1 = may attend), shape (2, 2)")
    assert str(attnpy.show(attnpy.causal_mask(2))).startswith("mask (1 = ")
    with pytest.raises(ValueError, match="tokens has 2 entries but the "
                                         "array has 3 columns"):
        attnpy.show(attnpy.causal_mask(3), tokens="a b")


def test_plot_figures_are_at_most_20_inches():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    X = np.random.default_rng(0).standard_normal((128, 8))
    fig, ax = attnpy.explain(X, X, X).plot()
    assert max(fig.get_size_inches()) <= 20.0
    assert len(ax.get_xticks()) <= 32 and ax.images
    plt.close(fig)
    Xh = np.random.default_rng(1).standard_normal((3, 4, 64, 8))
    fig, axes = attnpy.explain(Xh, Xh, Xh).plot()
    assert max(fig.get_size_inches()) <= 20.0
    plt.close(fig)
