"""attnpy.reference -- a plain NumPy twin of every public attnpy function.

This module is the oracle of attnpy's tests and a page to read beside the C
core (csrc/core/). Every function here computes the same thing as the
attnpy function of the same name, in the most direct NumPy there is: no
tiling, no fusion, no cleverness. It is slow and it builds every L x S
matrix; that is the point.

Shape legend (the same as csrc/core/attn.h)::

    ...  leading ("batch") dimensions, broadcast by NumPy's rules
    L    query positions            S    key/value positions
    E    features of a query/key    Ev   features of a value

The attention rule every entry point shares, for query row i and key j::

    allowed(i, j) = (mask[i, j] != 0) and causal(i, j)
    s(i, j)       = scale * (Q_i . K_j) + bias[i, j]   if allowed(i, j)
                  = -inf                               otherwise
    weights[i, :] = exp(s(i, :) - max_j s(i, j)) / sum_j exp(s(i, j) - max)
    out[i, :]     = sum over j with weights[i, j] != 0 of weights[i, j] * V_j

(A key with weight 0 -- masked, or its exp underflowed -- contributes
nothing, not even the NaN of 0 * inf: garbage in the value rows of padding
never reaches a query that cannot see them.)

A row whose every s(i, j) is -inf is FULLY MASKED (S == 0 included). Its
exp(s - max) would be exp(-inf + inf) = NaN, so it gets the policy chosen by
``fully_masked`` instead ("zero", "uniform", "nan" or "raise").

dtypes: float32 and float64 are computed in that precision. Everything else
is converted first: float16 -> float32, bool and integers -> float64,
long double -> float64. Complex, object, string, bytes, datetime, timedelta
and void arrays raise TypeError.

The submodule ``tutorial`` holds the tutorials' own code, written out
again as ``tutorial_*`` functions (same formulas, e.g. the ``-1e9`` fill of
masked scores), so the tests can show that attnpy gives the tutorials'
numbers.
"""
from ._common import (FULLY_MASKED_POLICIES, compute_dtype)
from .elementwise import (combine_heads, softmax, softmax_backward,
                          softmax_jacobian, split_heads)
from .positional import (add_positional_encoding, positional_encoding,
                         rotary_embedding)
from .attention import (attention, attention_backward, causal_mask,
                        create_causal_mask, merge_attention, padding_mask,
                        scaled_dot_product_attention)
from .layer import (MultiHeadAttention, feed_forward, feed_forward_backward,
                    layer_norm, layer_norm_backward, transformer_encoder_layer)
from .llama import rms_norm, rms_norm_backward, swiglu, swiglu_backward
from . import activations as _activations
# the activations' twins: every name of activations.__all__
from .activations import *  # noqa: F401,F403
from .quant import quantized_matmul
from .tutorial import (tutorial_combine_heads, tutorial_create_causal_mask,
                       tutorial_encoder_layer, tutorial_feed_forward,
                       tutorial_init_weights, tutorial_layer_norm,
                       tutorial_multi_head_attention,
                       tutorial_positional_encoding,
                       tutorial_scaled_dot_product_attention,
                       tutorial_softmax, tutorial_split_heads)
# private, for the tests: which (query, key) pairs a row may see
from .attention import _allowed  # noqa: F401

__all__ = [
    "softmax", "softmax_backward", "softmax_jacobian",
    "scaled_dot_product_attention", "attention", "attention_backward",
    "create_causal_mask", "causal_mask", "padding_mask",
    "positional_encoding", "add_positional_encoding",
    "rotary_embedding", "merge_attention",
    "split_heads", "combine_heads", "MultiHeadAttention",
    "compute_dtype",
    "layer_norm", "layer_norm_backward", *_activations.__all__,
    "feed_forward", "feed_forward_backward", "transformer_encoder_layer",
    "rms_norm", "rms_norm_backward", "swiglu", "swiglu_backward",
    "quantized_matmul",
    "tutorial_softmax", "tutorial_scaled_dot_product_attention",
    "tutorial_create_causal_mask", "tutorial_positional_encoding",
    "tutorial_split_heads", "tutorial_combine_heads",
    "tutorial_multi_head_attention", "tutorial_init_weights",
    "tutorial_layer_norm", "tutorial_feed_forward",
    "tutorial_encoder_layer",
]
