/*
 * attention/merge.h -- the log-sum-exp merge of partial results over
 * disjoint key sets (merge.c, behind the public attn_merge; not public).
 */
#ifndef ATTNPY_ATTN_MERGE_H
#define ATTNPY_ATTN_MERGE_H

#include <stddef.h>

/* One row of the merge. attn__merge_weights writes w[k] (the weight of
 * partial k) and returns the merged lse: -inf for a fully masked row (w
 * not written), NaN when an lse_k is NaN. The row routine:
 * out[c * os1] = sum over k with w[k] != 0 of w[k] out_k[k][c * cs[k]].  */
double attn__merge_weights(size_t K, const double *lse_k, double *w);
void attn__merge_row_f32(float *out, ptrdiff_t os1, size_t Ev, size_t K,
                         const double *w, const float *const *out_k,
                         const ptrdiff_t *cs);
void attn__merge_row_f64(double *out, ptrdiff_t os1, size_t Ev, size_t K,
                         const double *w, const double *const *out_k,
                         const ptrdiff_t *cs);

#endif /* ATTNPY_ATTN_MERGE_H */
