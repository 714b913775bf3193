"""attnpy: scaled dot-product attention for NumPy users, with a C core.

The functions of the NumPy attention tutorials (same names, same numbers),
a fused fast kernel (:func:`attention`), and tools to check every number.

>>> import numpy as np, attnpy
>>> X = np.array([[0.9, 0.3, 0.1, 0.5], [0.1, 0.8, 0.4, 0.2]])
>>> out, weights = attnpy.scaled_dot_product_attention(X, X, X)
>>> weights.sum(axis=-1)
array([1., 1.])
"""
try:
    from . import _core  # noqa: F401  (the C extension)
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        "attnpy's C extension (attnpy._core) is not built here. If you are "
        "in attnpy's source directory, either build in place with "
        "'python -m pip install -e .' or run Python from another directory."
    ) from exc
from . import reference
from ._attention import (attention, causal_mask, create_causal_mask,
                         padding_mask, scaled_dot_product_attention)
from ._decode import KVCache, merge_attention
from ._elementwise import (combine_heads, softmax, softmax_backward,
                           softmax_jacobian, split_heads)
from ._grad import attention_backward
from ._positional import (add_positional_encoding, positional_encoding,
                          rotary_embedding)
from ._runtime import get_isa, get_num_threads, isas, set_isa, set_num_threads
from ._encoder import TransformerEncoderLayer
from ._layer import (feed_forward, feed_forward_backward, layer_norm,
                     layer_norm_backward, rms_norm, rms_norm_backward, swiglu,
                     swiglu_backward)
from . import _activations
# the element-wise activations: every name of attnpy._activations.__all__
from ._activations import *  # noqa: F401,F403
from ._mha import MultiHeadAttention
from ._quant import quantized_matmul
from .teach import AttentionTrace, explain, show

__version__ = "0.1.0"


def __getattr__(name):
    # the interactive figures load anywidget, so only on first use
    if name in ("playground", "attention_matrix", "head_view"):
        from . import widgets
        return getattr(widgets, name)
    raise AttributeError(f"module 'attnpy' has no attribute {name!r}")

__all__ = [
    "softmax", "softmax_backward", "softmax_jacobian",
    "scaled_dot_product_attention", "attention", "attention_backward",
    "create_causal_mask", "causal_mask", "padding_mask",
    "positional_encoding", "add_positional_encoding", "split_heads",
    "combine_heads", "MultiHeadAttention", "TransformerEncoderLayer",
    "layer_norm", "layer_norm_backward", *_activations.__all__,
    "feed_forward", "feed_forward_backward", "rms_norm",
    "rms_norm_backward", "swiglu", "swiglu_backward",
    "quantized_matmul", "set_num_threads", "isas", "get_isa", "set_isa",
    "rotary_embedding", "merge_attention", "KVCache",
    "get_num_threads", "explain", "AttentionTrace", "show", "reference",
    "__version__",
]
