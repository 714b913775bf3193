/*
 * tests/c/calls.h -- the core's row kernels called with their arguments
 * in a line (the test programs' shorthand, ca_<kernel>): each fills the kernel's
 * argument struct (attn.h) and calls it. A NULL exec runs one thread.
 */
#ifndef ATTNPY_TEST_CALLS_H
#define ATTNPY_TEST_CALLS_H

#include "attn.h"

static inline attn_status ca_softmax(attn_dtype dt, attn_mat out, attn_mat in,
                                    size_t nrows, size_t n)
{
    const attn_softmax_args a = {dt, nrows, n, out, in};
    return attn_softmax(&a, NULL);
}

static inline attn_status ca_softmax_backward(attn_dtype dt, attn_mat dx,
                                             attn_mat dy, attn_mat y,
                                             size_t nrows, size_t n)
{
    const attn_softmax_grad_args a = {dt, nrows, n, dx, dy, y};
    return attn_softmax_backward(&a, NULL);
}

static inline attn_status ca_softmax_jacobian(attn_dtype dt, attn_mat jac,
                                             attn_mat y, size_t nrows,
                                             size_t n)
{
    const attn_softmax_jac_args a = {dt, nrows, n, jac, y};
    return attn_softmax_jacobian(&a, NULL);
}

static inline attn_status ca_posenc(attn_dtype dt, attn_mat out, size_t B,
                                   size_t T, size_t D, double offset,
                                   double base, int accumulate)
{
    const attn_posenc_args a = {dt, B, T, D, out, offset, base, accumulate};
    return attn_posenc(&a, NULL);
}

static inline attn_status ca_copy2d(attn_dtype dt, attn_mat out, attn_mat in,
                                   size_t B, size_t rows, size_t cols)
{
    const attn_copy_args a = {dt, B, rows, cols, out, in};
    return attn_copy2d(&a, NULL);
}

static inline attn_status ca_rope(attn_dtype dt, attn_mat out, attn_mat in,
                                 size_t B, size_t T, size_t E, double offset,
                                 double base, int interleaved)
{
    const attn_rope_args a = {dt, B, T, E, out, in, offset, base, interleaved};
    return attn_rope(&a, NULL);
}

static inline attn_status ca_merge(attn_dtype dt, size_t K, size_t B, size_t L,
                                  size_t Ev, attn_mat out, attn_mat lse,
                                  const attn_mat *outs, const attn_mat *lses)
{
    const attn_merge_args a = {dt, K, B, L, Ev, out, lse, outs, lses};
    return attn_merge(&a, NULL);
}

static inline attn_status ca_bias_act(attn_dtype dt, attn_act act,
                                     size_t nrows, size_t n, attn_mat y,
                                     attn_mat x, attn_mat bias,
                                     const attn_exec *ex)
{
    const attn_act_args a = {dt, act, nrows, n, y, x, bias};
    return attn_bias_act(&a, ex);
}

static inline attn_status ca_bias_act_backward(attn_dtype dt, attn_act act,
                                              size_t nrows, size_t n,
                                              attn_mat dx, attn_mat dbias,
                                              attn_mat dy, attn_mat x,
                                              attn_mat bias,
                                              const attn_exec *ex)
{
    const attn_act_grad_args a = {dt, act, nrows, n, dx, dbias, dy, x, bias};
    return attn_bias_act_backward(&a, ex);
}

static inline attn_status ca_swiglu(attn_dtype dt, size_t nrows, size_t n,
                                   attn_mat y, attn_mat gate, attn_mat up,
                                   const attn_exec *ex)
{
    const attn_glu_args a = {dt, nrows, n, y, gate, up};
    return attn_swiglu(&a, ex);
}

static inline attn_status ca_swiglu_backward(attn_dtype dt, size_t nrows,
                                            size_t n, attn_mat dgate,
                                            attn_mat dup, attn_mat dy,
                                            attn_mat gate, attn_mat up,
                                            const attn_exec *ex)
{
    const attn_glu_grad_args a = {dt, nrows, n, dgate, dup, dy, gate, up};
    return attn_swiglu_backward(&a, ex);
}

static inline attn_status ca_qmatmul(float *out, size_t ldo, const float *x,
                                    size_t ldx, const uint8_t *w, size_t ldw,
                                    size_t M, size_t N, size_t K,
                                    attn_qtype q, const attn_exec *ex)
{
    const attn_qmm_args a = {q, M, N, K, out, ldo, x, ldx, w, ldw};
    return attn_qmatmul(&a, ex);
}

#endif /* ATTNPY_TEST_CALLS_H */
