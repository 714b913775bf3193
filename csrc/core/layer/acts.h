/*
 * layer/acts.h -- the activations of attn_bias_act, one line each: the
 * one place an activation is defined. attn.h makes attn_act of this
 * list (ATTN_ACT_<ID>, valued by position: append, never reorder);
 * layer/act.c takes the costs, the binding (python/layer.c) the names,
 * and layer/act_tmpl.h the formulas, instantiated on every instruction
 * set by isa/<set>.c, so a new line here reaches every set and dtype.
 *
 *   X(ID, name, cost, y, dx)
 *     name  the binding's activation= string
 *     cost  rough work of one element (1: a copy), for the thread count
 *     y     y(h), the activation of the W-lane vector h
 *     dx    dy * y'(h), the gradient from the incoming gradient d
 * y and dx are expressions over the SIMD primitives (VMUL, VSEL, ...;
 * `one` is VSET1(1)) and simd/math.h's functions (SFX(phi), SFX(npdf),
 * SFX(exp_neg), SFX(sigmoid)), or a helper of layer/act_tmpl.h: one
 * fixed sequence of operations, the same bits on every set (the numeric
 * rule). Only layer/act_tmpl.h expands them; attn.h uses ID alone.
 *
 *   none       h                                  dx = d
 *   relu       h < 0 ? +0 : h (NaN stays NaN)     dx = h > 0 ? d : +0
 *                                                 (never 0 * inf)
 *   gelu       h Phi(h)                           d (Phi(h) + h pdf(h))
 *   gelu_tanh  h sigmoid(2 z), z = beta (h + kappa h^3) (act_tmpl.h)
 */
#ifndef ATTNPY_LAYER_ACTS_H
#define ATTNPY_LAYER_ACTS_H

#define ATTN_ACT_LIST(X)                                                      \
    X(NONE, "none", 1.0, h, VMUL(d, one))                                     \
    X(RELU, "relu", 1.0, VSEL(VLT(h, VZERO()), VZERO(), h),                   \
      VSEL(VLT(VZERO(), h), d, VZERO()))                                      \
    X(GELU, "gelu", 8.0, VMUL(h, SFX(phi)(h)),                                \
      VMUL(d, VFMA(h, SFX(npdf)(h), SFX(phi)(h))))                            \
    X(GELU_TANH, "gelu_tanh", 8.0, SFX(gelu_tanh_v)(h),                       \
      VMUL(d, SFX(dgelu_tanh_v)(h)))

#endif /* ATTNPY_LAYER_ACTS_H */
