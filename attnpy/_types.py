"""Type aliases of the public signatures (private; for annotations only).

Option strings are Literals, so a type checker flags ``causal="sideways"``
before the call raises ValueError.
"""
from __future__ import annotations

from typing import Any, Literal, Optional, Tuple, Union

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

#: a float array attnpy returns (float32 or float64, or 16-bit types)
Array = NDArray[Any]
#: what the attention functions' ``causal=`` accepts
Causal = Union[bool, Literal["top_left", "bottom_right"]]
#: ``fully_masked=``
FullyMasked = Literal["zero", "uniform", "nan", "raise"]
#: ``causal_mask(..., align=)``
Align = Literal["top_left", "bottom_right"]
#: ``gelu(..., approximate=)``
Approximate = Literal["none", "tanh"]
#: ``feed_forward(..., activation=)``
Activation = Literal["relu", "gelu", "gelu_tanh"]
#: ``window=(left, right)``, either side None (unbounded)
Window = Optional[Tuple[Optional[int], Optional[int]]]
#: ``seed=`` of the layers
Seed = Union[None, int, np.random.Generator]

__all__ = ["Activation", "Align", "Approximate", "Array", "ArrayLike",
           "Causal", "DTypeLike", "FullyMasked", "Seed", "Window"]
