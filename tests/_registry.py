"""One registry of attnpy's public functions, for the generic tests.

Each entry: the public name, its family, its NumPy twin in
attnpy.reference (None when it has none), and an argument generator
``gen(rng, dtype) -> (args, kwargs)`` whose array arguments are plain
contiguous ndarrays (the generic tests lay them out in every way
tests/_arrays.py knows). ``out`` says whether the function takes ``out=``
(of the first result's shape and dtype) and ``writes`` names an argument
the function modifies in place (everything else must come back unchanged).
Optional: ``dtypes``, the dtypes the generic tests pass to ``gen`` (both
float precisions unless said); ``variants``, keyword sets laid over gen's
keywords, each checked against the twin; ``alias_gen``, a generator whose
arguments have the result's shape, for the out=-aliases-an-input check;
``twin_types``, False when the twin accepts any dtype (it only moves
data); ``bench``, the part of ``python -m attnpy bench`` that times the
function (``"part"`` or ``"part:Via"`` when it is timed inside Via), or
None with the reason in NOT_BENCHED.

tests/reliability/test_registry.py runs every entry against its twin in
every memory layout, with bad types, with out= (fresh, strided, aliasing
an input) and checks its inputs stay unchanged; it also checks that every
public function is registered here, has a spec in the fuzzer
(tests/fuzz_calls.py, which builds the specs of most functions from these
entries) and is timed by the bench or says why not.
"""
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

import attnpy
import attnpy.reference as ref


@dataclass(frozen=True)
class Entry:
    name: str
    family: str
    twin: Optional[Callable[..., Any]]
    gen: Optional[Callable[..., Any]]
    out: bool = False
    writes: Optional[int] = None    # position of an argument written to
    dtypes: tuple = (np.float64, np.float32)
    variants: tuple = ({},)
    alias_gen: Optional[Callable[..., Any]] = None
    twin_types: bool = True
    bench: Optional[str] = None

    @property
    def func(self):
        return getattr(attnpy, self.name)


def _n(rng, *shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


def _attn(rng, dt):
    Q, K, V = _n(rng, 2, 5, 4, dtype=dt), _n(rng, 2, 7, 4, dtype=dt), \
        _n(rng, 2, 7, 3, dtype=dt)
    mask = rng.random((5, 7)) < 0.8
    return (Q, K, V), dict(mask=mask, bias=_n(rng, 5, 7, dtype=dt),
                           causal="bottom_right")


# gen's mask, bias and bottom-right causal; nothing at all; top-left
# causal with the uniform policy for rows it leaves empty
_ATTN_VARIANTS = ({}, dict(mask=None, bias=None, causal=False),
                  dict(causal=True, fully_masked="uniform"))


def _attn_square(rng, dt):
    """Q, K, V and the output all (2, 5, 5): out= may be any of them."""
    Q, K, V = (_n(rng, 2, 5, 5, dtype=dt) for _ in range(3))
    return (Q, K, V), dict(mask=rng.random((5, 5)) < 0.8, causal=True)


def _backward(rng, dt):
    (Q, K, V), kw = _attn(rng, dt)
    out, lse = attnpy.attention(Q, K, V, return_lse=True, **kw)
    return (np.ones_like(out), Q, K, V, out, lse), kw


def _softmax_grad(rng, dt):
    y = attnpy.softmax(_n(rng, 3, 6, dtype=dt))
    return (_n(rng, 3, 6, dtype=dt), y), {}


def _ffn(rng, dt):
    return (_n(rng, 2, 3, 4, dtype=dt), _n(rng, 4, 6, dtype=dt),
            _n(rng, 6, dtype=dt), _n(rng, 6, 4, dtype=dt),
            _n(rng, 4, dtype=dt)), dict(activation="gelu")


def _ffn_bwd(rng, dt):
    args, kw = _ffn(rng, dt)
    return (_n(rng, 2, 3, 4, dtype=dt),) + args, kw


def _qblocks(rng, dt):
    """x (2, 3, 64) float32 (whatever dt: the function takes float32
    only) and 64 rows of Q4_1 blocks: random float16 d, m and nibbles."""
    d, m = (rng.standard_normal((64, 2)).astype(np.float16).view(np.uint8)
            .reshape(64, 2, 2) for _ in range(2))
    q = rng.integers(0, 256, (64, 2, 16), dtype=np.uint8)
    w = np.concatenate([d, m, q], axis=-1).reshape(64, 40)
    return (_n(rng, 2, 3, 64, dtype=np.float32), w, "q4_1"), {}


def _merge(rng, dt):
    Q, K, V = _n(rng, 2, 3, 4, dtype=dt), _n(rng, 2, 8, 4, dtype=dt), \
        _n(rng, 2, 8, 5, dtype=dt)
    parts = [attnpy.attention(Q, K[:, a:b], V[:, a:b], return_lse=True)
             for a, b in ((0, 3), (3, 8))]
    # lses with one more leading dim than outs: the two broadcast
    return ([p[0] for p in parts], [p[1][None] for p in parts]), {}


REGISTRY = [
    Entry("attention", "attention", ref.attention, _attn, out=True,
          variants=_ATTN_VARIANTS, alias_gen=_attn_square, bench="tiny"),
    Entry("scaled_dot_product_attention", "attention",
          ref.scaled_dot_product_attention, _attn, out=True,
          variants=_ATTN_VARIANTS, alias_gen=_attn_square, bench="tiny"),
    Entry("attention_backward", "attention", ref.attention_backward,
          _backward, twin_types=False, bench="backward"),
    Entry("merge_attention", "attention", ref.merge_attention, _merge),
    Entry("create_causal_mask", "attention", ref.create_causal_mask,
          lambda rng, dt: ((5,), {})),
    Entry("causal_mask", "attention", ref.causal_mask,
          lambda rng, dt: ((3, 5), dict(align="bottom_right"))),
    Entry("padding_mask", "attention", ref.padding_mask,
          lambda rng, dt: ((np.array([2, 5, 0]), 5), {}),
          twin_types=False),            # the twin takes complex lengths
    Entry("softmax", "elementwise", ref.softmax,
          lambda rng, dt: ((_n(rng, 3, 4, 6, dtype=dt),), dict(axis=0)),
          out=True, variants=({}, dict(axis=-1), dict(axis=1)),
          alias_gen=lambda rng, dt: ((_n(rng, 4, 4, dtype=dt),),
                                     dict(axis=0))),
    Entry("softmax_backward", "elementwise", ref.softmax_backward,
          _softmax_grad, out=True),
    Entry("softmax_jacobian", "elementwise", ref.softmax_jacobian,
          lambda rng, dt: ((attnpy.softmax(_n(rng, 2, 5, dtype=dt)),), {})),
    Entry("split_heads", "elementwise", ref.split_heads,
          lambda rng, dt: ((_n(rng, 2, 3, 8, dtype=dt), 4), {}),
          twin_types=False, bench="mha"),
    Entry("combine_heads", "elementwise", ref.combine_heads,
          lambda rng, dt: ((_n(rng, 2, 4, 3, 2, dtype=dt),), {}), out=True,
          twin_types=False, bench="mha"),
    Entry("positional_encoding", "positional", ref.positional_encoding,
          lambda rng, dt: ((7, 6), dict(dtype=dt, base=500.0)), out=True),
    Entry("add_positional_encoding", "positional",
          ref.add_positional_encoding,
          lambda rng, dt: ((_n(rng, 2, 5, 6, dtype=dt),), dict(offset=3)),
          writes=0),
    Entry("rotary_embedding", "positional", ref.rotary_embedding,
          lambda rng, dt: ((_n(rng, 2, 5, 6, dtype=dt),),
                           dict(offset=2, interleaved=True)), out=True,
          bench="llm"),
    Entry("layer_norm", "layer", ref.layer_norm,
          lambda rng, dt: ((_n(rng, 3, 8, dtype=dt),),
                           dict(weight=_n(rng, 8, dtype=dt),
                                bias=_n(rng, 8, dtype=dt))), out=True,
          bench="layer:TransformerEncoderLayer"),
    Entry("layer_norm_backward", "layer", ref.layer_norm_backward,
          lambda rng, dt: ((_n(rng, 3, 8, dtype=dt), _n(rng, 3, 8, dtype=dt)),
                           dict(weight=_n(rng, 8, dtype=dt)))),
    Entry("gelu", "layer", ref.gelu,
          lambda rng, dt: ((_n(rng, 3, 8, dtype=dt),),
                           dict(approximate="tanh")), out=True),
    Entry("gelu_backward", "layer", ref.gelu_backward,
          lambda rng, dt: ((_n(rng, 3, 8, dtype=dt), _n(rng, 3, 8, dtype=dt)),
                           {}), out=True),
    Entry("feed_forward", "layer", ref.feed_forward, _ffn,
          bench="layer:TransformerEncoderLayer"),
    Entry("feed_forward_backward", "layer", ref.feed_forward_backward,
          _ffn_bwd),
    Entry("rms_norm", "layer", ref.rms_norm,
          lambda rng, dt: ((_n(rng, 3, 8, dtype=dt),),
                           dict(eps=1e-5, weight=_n(rng, 8, dtype=dt))),
          out=True, bench="llm"),
    Entry("rms_norm_backward", "layer", ref.rms_norm_backward,
          lambda rng, dt: ((_n(rng, 3, 8, dtype=dt), _n(rng, 3, 8, dtype=dt)),
                           dict(weight=_n(rng, 8, dtype=dt)))),
    Entry("silu", "layer", ref.silu,
          lambda rng, dt: ((_n(rng, 3, 8, dtype=dt),), {}), out=True),
    Entry("swiglu", "layer", ref.swiglu,
          lambda rng, dt: ((_n(rng, 3, 8, dtype=dt), _n(rng, 3, 8, dtype=dt)),
                           {}), out=True, bench="llm"),
    Entry("swiglu_backward", "layer", ref.swiglu_backward,
          lambda rng, dt: ((_n(rng, 3, 8, dtype=dt), _n(rng, 3, 8, dtype=dt),
                            _n(rng, 3, 8, dtype=dt)), {})),
    Entry("quantized_matmul", "quant", ref.quantized_matmul, _qblocks,
          out=True, dtypes=(np.float32,), bench="llm"),
    Entry("set_num_threads", "runtime", None, None),
    Entry("get_num_threads", "runtime", None, None),
    Entry("isas", "runtime", None, None),
    Entry("get_isa", "runtime", None, None),
    Entry("set_isa", "runtime", None, None),
]

#: public names that are classes or teaching tools, tested in their folders
NOT_FUNCTIONS = {"MultiHeadAttention", "TransformerEncoderLayer", "KVCache",
                 "explain", "AttentionTrace", "show", "reference",
                 "__version__"}

BY_NAME = {e.name: e for e in REGISTRY}

#: why ``python -m attnpy bench`` does not time a function (every entry
#: has a ``bench`` part or a line here)
NOT_BENCHED = {
    "merge_attention": "a sum over partial results: O(L * Ev) next to the "
                       "attention calls that make them",
    "create_causal_mask": "builds a mask once per shape",
    "causal_mask": "builds a mask once per shape",
    "padding_mask": "builds a mask once per batch",
    "softmax": "one pass over its input; the attention rows time the "
               "softmax inside the kernel",
    "softmax_backward": "one pass; the backward part times the fused "
                        "attention backward",
    "softmax_jacobian": "a teaching tool (L x L per row)",
    "positional_encoding": "a table built once per model",
    "add_positional_encoding": "one pass over its input, once per model "
                               "call",
    "layer_norm_backward": "the layer part times forward passes only",
    "gelu": "the bench's encoder layer uses ReLU",
    "gelu_backward": "the layer part times forward passes only",
    "feed_forward_backward": "the layer part times forward passes only",
    "rms_norm_backward": "the llm part times inference only",
    "silu": "timed inside swiglu (the llm part)",
    "swiglu_backward": "the llm part times inference only",
    "set_num_threads": "sets the thread count of every row",
    "get_num_threads": "reads the thread count every row prints",
    "isas": "lists the instruction sets the bench's --isa takes",
    "get_isa": "reads the instruction set every row prints",
    "set_isa": "chooses the instruction set (the bench's --isa)",
}


def first(result):
    """The first array of a result (an array, or a tuple of them)."""
    return result[0] if isinstance(result, tuple) else result
