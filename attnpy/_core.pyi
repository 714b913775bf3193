# Type stub for the C extension attnpy._core (private; use attnpy.*).
# tests/reliability/test_core_stub.py holds it to the extension's method
# table: the same functions, each with the parameters (names, kinds and
# defaults) of its text signature.
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

_Causal = bool | Literal["top_left", "bottom_right"] | None
_Policy = Literal["zero", "uniform", "nan", "raise"]
_Act = Literal["none", "relu", "gelu", "gelu_tanh"]
_F = NDArray[np.floating[Any]]
# the public variant keywords as one tuple, in the order
# csrc/python/variants.c reads them (window, alibi_slopes, softcap, ...);
# trailing entries may be left out
_Variants = tuple[Any, ...] | None

def sdpa(Q: ArrayLike, K: ArrayLike, V: ArrayLike, /, *,
         mask: ArrayLike | None = None, bias: ArrayLike | None = None,
         causal: _Causal = False, scale: float | None = None,
         fully_masked: _Policy = "zero", out: NDArray[Any] | None = None,
         weights_out: NDArray[Any] | None = None, fname: str | None = None,
         variants: _Variants = None, pos_shift: int = 0,
         return_weights: bool = False, return_scores: bool = False,
         return_lse: bool = False) -> Any: ...
def sdpa_bwd(Q: ArrayLike, K: ArrayLike, V: ArrayLike, /, *,
             mask: ArrayLike | None = None, bias: ArrayLike | None = None,
             causal: _Causal = False, scale: float | None = None,
             fully_masked: _Policy = "zero", dout: ArrayLike,
             out: ArrayLike, lse: ArrayLike, bias_grad: bool = False,
             fname: str = "attention_backward",
             variants: _Variants = None, pos_shift: int = 0
             ) -> tuple[_F, _F, _F, _F | None]: ...
def merge(outs: list[NDArray[Any]], lses: list[NDArray[Any]], /, *,
          fname: str = "merge_attention") -> tuple[_F, _F]: ...
def softmax(x: ArrayLike, /, *, axis: int, out: NDArray[Any] | None = None,
            fname: str = "softmax") -> _F: ...
def softmax_backward(dy: ArrayLike, y: ArrayLike, /, *, axis: int,
                     out: NDArray[Any] | None = None,
                     fname: str = "softmax_backward") -> _F: ...
def softmax_jacobian(y: ArrayLike, /, *, axis: int,
                     fname: str = "softmax_jacobian") -> _F: ...
def combine_heads(x: ArrayLike, /, *, out: NDArray[Any] | None = None,
                  fname: str = "combine_heads") -> _F: ...
def posenc(x: NDArray[Any], /, *, offset: float, base: float,
           accumulate: bool, fname: str = "posenc",
           argname: str = "x") -> _F: ...
def rope(x: ArrayLike, /, *, offset: float, base: float, interleaved: bool,
         out: NDArray[Any] | None = None, fname: str = "rope") -> _F: ...
def layer_norm(x: ArrayLike, /, *, residual: ArrayLike | None = None,
               shift: ArrayLike | None = None,
               weight: ArrayLike | None = None,
               bias: ArrayLike | None = None, eps: float = 1e-06,
               eps_in_sqrt: bool = False, out: NDArray[Any] | None = None,
               return_sum: bool = False,
               fname: str = 'layer_norm') -> Any: ...
def layer_norm_backward(dy: ArrayLike, x: ArrayLike, /, *,
                        weight: ArrayLike | None = None, eps: float = 1e-06,
                        eps_in_sqrt: bool = False,
                        return_dweight: bool = False,
                        return_dbias: bool = False,
                        out: NDArray[Any] | None = None,
                        fname: str = 'layer_norm_backward'
                        ) -> tuple[Any, Any, Any]: ...
def bias_act(x: ArrayLike, /, *, bias: ArrayLike | None = None,
             activation: _Act = 'none', out: NDArray[Any] | None = None,
             fname: str = 'bias_act') -> _F: ...
def bias_act_backward(dy: ArrayLike, x: ArrayLike, /, *,
                      bias: ArrayLike | None = None,
                      activation: _Act = 'none', return_dbias: bool = False,
                      out: NDArray[Any] | None = None,
                      fname: str = 'bias_act_backward') -> tuple[Any, Any]: ...
def rms_norm(x: ArrayLike, /, *, weight: ArrayLike | None = None,
             eps: float = 1e-06, out: NDArray[Any] | None = None,
             fname: str = 'rms_norm') -> NDArray[np.floating[Any]]: ...
def rms_norm_backward(dy: ArrayLike, x: ArrayLike, /, *,
                      weight: ArrayLike | None = None, eps: float = 1e-06,
                      return_dweight: bool = False,
                      out: NDArray[Any] | None = None,
                      fname: str = 'rms_norm_backward') -> tuple[Any, Any]: ...
def swiglu(gate: ArrayLike, up: ArrayLike | None = None, /, *,
           out: NDArray[Any] | None = None,
           fname: str = 'swiglu') -> NDArray[np.floating[Any]]: ...
def swiglu_backward(dy: ArrayLike, gate: ArrayLike,
                    up: ArrayLike | None = None, /, *,
                    fname: str = 'swiglu_backward') -> tuple[Any, Any]: ...
def qmatmul(x: NDArray[Any], weight: NDArray[Any], out: NDArray[Any], /, *,
            qtype: str,
            fname: str = 'qmatmul') -> NDArray[np.float32]: ...
def as_real(obj: Any, fname: str, arg: str) -> NDArray[Any]: ...
def as_array16(obj: Any, fname: str, arg: str) -> NDArray[Any]: ...
def set_num_threads(n: int, /) -> int: ...
def get_num_threads() -> int: ...
def isa() -> str: ...
def set_isa(name: str, /) -> str: ...
def isas() -> list[tuple[str, bool, bool]]: ...
def available_cpus() -> int: ...
def read_bytes(arrays: list[NDArray[Any]] | tuple[NDArray[Any], ...], /
               ) -> int: ...
