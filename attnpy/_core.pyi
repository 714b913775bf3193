# Type stub for the C extension attnpy._core (private; use attnpy.*).
from typing import Any, Literal, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

_Causal = bool | Literal["top_left", "bottom_right"]
_Policy = Literal["zero", "uniform", "nan", "raise"]

@overload
def sdpa(Q: ArrayLike, K: ArrayLike, V: ArrayLike, mask: ArrayLike | None,
         bias: ArrayLike | None, causal: _Causal, scale: float | None,
         fully_masked: _Policy, out: NDArray[Any] | None,
         weights_out: NDArray[Any] | None, want: Literal[0],
         fname: str = ...) -> NDArray[np.floating[Any]]: ...
@overload
def sdpa(Q: ArrayLike, K: ArrayLike, V: ArrayLike, mask: ArrayLike | None,
         bias: ArrayLike | None, causal: _Causal, scale: float | None,
         fully_masked: _Policy, out: NDArray[Any] | None,
         weights_out: NDArray[Any] | None, want: Literal[1, 2],
         fname: str = ...) -> tuple[NDArray[np.floating[Any]], ...]: ...
@overload
def sdpa(Q: ArrayLike, K: ArrayLike, V: ArrayLike, mask: ArrayLike | None,
         bias: ArrayLike | None, causal: _Causal, scale: float | None,
         fully_masked: _Policy, out: NDArray[Any] | None,
         weights_out: None, want: Literal[3],
         fname: str = ...) -> tuple[NDArray[np.floating[Any]],
                                    NDArray[np.floating[Any]]]: ...
def sdpa_bwd(Q: ArrayLike, K: ArrayLike, V: ArrayLike,
             mask: ArrayLike | None, bias: ArrayLike | None,
             causal: _Causal, scale: float | None, fully_masked: _Policy,
             dout: ArrayLike, out: ArrayLike, lse: ArrayLike,
             bias_grad: bool, fname: str
             ) -> tuple[NDArray[np.floating[Any]], NDArray[np.floating[Any]],
                        NDArray[np.floating[Any]],
                        NDArray[np.floating[Any]] | None]: ...
def softmax(x: ArrayLike, axis: int, out: NDArray[Any] | None,
            fname: str) -> NDArray[np.floating[Any]]: ...
def softmax_backward(dy: ArrayLike, y: ArrayLike, axis: int,
                     out: NDArray[Any] | None,
                     fname: str) -> NDArray[np.floating[Any]]: ...
def softmax_jacobian(y: ArrayLike, axis: int,
                     fname: str) -> NDArray[np.floating[Any]]: ...
def posenc(x: NDArray[Any], offset: float, base: float, accumulate: bool,
           fname: str) -> NDArray[np.floating[Any]]: ...
def combine_heads(x: ArrayLike, out: NDArray[Any] | None,
                  fname: str) -> NDArray[np.floating[Any]]: ...
def set_num_threads(n: int) -> int: ...
def get_num_threads() -> int: ...
def isa() -> str: ...
def set_isa(name: str) -> str: ...
def available_cpus() -> int: ...
def rope(x: ArrayLike, out: NDArray[Any] | None, offset: float, base: float,
         interleaved: bool, fname: str) -> NDArray[np.floating[Any]]: ...
def merge(outs: list[NDArray[Any]], lses: list[NDArray[Any]],
          fname: str) -> tuple[NDArray[np.floating[Any]],
                               NDArray[np.floating[Any]]]: ...
_Act = Literal["none", "relu", "gelu", "gelu_tanh"]
def layer_norm(x: ArrayLike, residual: ArrayLike | None,
               shift: ArrayLike | None, weight: ArrayLike | None,
               bias: ArrayLike | None, eps: float, eps_in_sqrt: bool,
               out: NDArray[Any] | None, want_sum: bool,
               fname: str) -> Any: ...
def layer_norm_backward(dy: ArrayLike, x: ArrayLike, weight: ArrayLike | None,
                        eps: float, eps_in_sqrt: bool, want_dweight: bool,
                        want_dbias: bool, out: NDArray[Any] | None,
                        fname: str) -> tuple[Any, Any, Any]: ...
def bias_act(x: ArrayLike, bias: ArrayLike | None, activation: _Act,
             out: NDArray[Any] | None,
             fname: str) -> NDArray[np.floating[Any]]: ...
def bias_act_backward(dy: ArrayLike, x: ArrayLike, bias: ArrayLike | None,
                      activation: _Act, want_dbias: bool,
                      out: NDArray[Any] | None,
                      fname: str) -> tuple[Any, Any]: ...
def rms_norm(x: ArrayLike, weight: ArrayLike | None, eps: float,
             out: NDArray[Any] | None,
             fname: str) -> NDArray[np.floating[Any]]: ...
def rms_norm_backward(dy: ArrayLike, x: ArrayLike, weight: ArrayLike | None,
                      eps: float, want_dweight: bool,
                      out: NDArray[Any] | None,
                      fname: str) -> tuple[Any, Any]: ...
def swiglu(gate: ArrayLike, up: ArrayLike | None, out: NDArray[Any] | None,
           fname: str) -> NDArray[np.floating[Any]]: ...
def swiglu_backward(dy: ArrayLike, gate: ArrayLike, up: ArrayLike | None,
                    fname: str) -> tuple[Any, Any]: ...
