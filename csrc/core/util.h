/*
 * util.h -- small helpers shared by the core's kernels (not public).
 */
#ifndef ATTNPY_UTIL_H
#define ATTNPY_UTIL_H

/* element offset of batch item b of an attn_mat (boff NULL: 0) */
#define OFF(m, b) ((m).boff ? (m).boff[(b)] : 0)

#endif /* ATTNPY_UTIL_H */
