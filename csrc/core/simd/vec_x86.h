/*
 * simd/vec_x86.h -- the primitives that AVX2 (simd/vec_avx2.h) and
 * AVX-512 (simd/vec_avx512.h) spell alike: VI_(op), the set's intrinsic
 * of op for this element type (_mm256_add_ps ...), and VFN_(name), the
 * set file's helper (avx2f_orsign ...). Included at the end of their
 * template parameters; not include-guarded (simd/undef.h ends them).
 */
#define VZERO() VI_(setzero)()
#define VSET1(x) VI_(set1)(x)
#define VLOADU(p) VI_(loadu)(p)
#define VSTOREU(p, v) VI_(storeu)(p, v)
#define VADD(a, b) VI_(add)(a, b)
#define VSUB(a, b) VI_(sub)(a, b)
#define VMUL(a, b) VI_(mul)(a, b)
#define VDIV(a, b) VI_(div)(a, b)
#define VFMA(a, b, c) VI_(fmadd)(a, b, c)
#define VFNMA(a, b, c) VI_(fnmadd)(a, b, c)
#define VMAX(a, b) VI_(max)(a, b)
#define VMIN(a, b) VI_(min)(a, b)
#define VORSIGN(a, s) VFN_(orsign)(a, s)
#define VPOW2T(t) VFN_(pow2t)(t)
#define VGETEXP(a) VFN_(getexp)(a)
#define VGETMANT(a) VFN_(getmant)(a)
#define VTRANS(r) VFN_(trans)(r)
