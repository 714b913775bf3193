/*
 * runtime/isa.h -- the instruction sets, in one list (not public; the
 * public calls are attn_isa_name, attn_set_isa and attn_isa_info in
 * attn.h).
 *
 * Every set runs the same kernels (isa/<set>.c instantiates the
 * templates over simd/vec_<set>.h) and, but for "amx", gives the same
 * bits: the set changes the speed, never the numbers. "amx" is opt-in
 * (attn_set_isa("amx") or ATTNPY_ISA=amx): its bfloat16 products round
 * in AMX's own way. The default is the best set that is not opt-in.
 *
 * X(ID, name, kernels, usable, opt_in), best first:
 *   kernels  the isa/<set>.c table (isa/kernels.h), or NULL when this
 *            build has none ("portable" picks its build at run time)
 *   usable   compiled in and usable on this CPU and OS (runtime/cpuid.c
 *            tests the ATTN_X86_* features below)
 */
#ifndef ATTNPY_RUNTIME_ISA_H
#define ATTNPY_RUNTIME_ISA_H

#include <stddef.h>

#include "runtime/platform.h"

struct attn_kernels_;
typedef struct attn_kernels_ attn_kernels; /* isa/kernels.h */

/* the x86 features attn__x86_features() (runtime/platform.h) reports:
 * usable by this process, the CPU has them AND the operating system
 * saves their registers (XCR0); runtime/cpuid.c tests each. 0 on other
 * architectures.                                                        */
enum {
    ATTN_X86_AVX2_FMA = 1, /* AVX2 + FMA3 + F16C (ymm state enabled)       */
    ATTN_X86_AVX512F = 2,  /* AVX-512F (zmm and opmask state enabled)      */
    ATTN_X86_F16C = 4,     /* vcvtph2ps / vcvtps2ph (set with AVX2_FMA)    */
    ATTN_X86_AVX512_BF16 = 8, /* AVX512-BF16 (with AVX512F); AMX-BF16
                                 CPUs have it                          */
    ATTN_X86_AMX_BF16 = 16 /* AMX tiles and tdpbf16ps (with AVX512F), the
                              tile data granted to the process (Linux) */
};

/* what this build compiles (runtime/platform.h has the architectures)   */
#if ATTN_ARCH_X86 && (defined(__GNUC__) || defined(__clang__))
#define ATTN_HAVE_PORT_WIDE 1 /* the portable code built for AVX2 + FMA */
#else
#define ATTN_HAVE_PORT_WIDE 0
#endif
/* AMX: Linux on x86-64 (runtime/cpuid.c asks the kernel for the tile
 * state), compilers that know the AMX target                           */
#if ATTN_ARCH_X86 && defined(__linux__) && defined(__x86_64__)                 \
    && ((defined(__clang__) && __clang_major__ >= 12)                          \
        || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11))
#define ATTN_HAVE_AMX 1
#else
#define ATTN_HAVE_AMX 0
#endif

#if ATTN_HAVE_AMX
extern const attn_kernels attn__kernels_amx;
#define ATTN_KERNELS_AMX &attn__kernels_amx
#define ATTN_USABLE_AMX ((attn__x86_features() & ATTN_X86_AMX_BF16) != 0)
#else
#define ATTN_KERNELS_AMX NULL
#define ATTN_USABLE_AMX 0
#endif
#if ATTN_ARCH_X86
extern const attn_kernels attn__kernels_avx512, attn__kernels_avx2;
#define ATTN_KERNELS_AVX512 &attn__kernels_avx512
#define ATTN_KERNELS_AVX2 &attn__kernels_avx2
#define ATTN_USABLE_AVX512 ((attn__x86_features() & ATTN_X86_AVX512F) != 0)
#define ATTN_USABLE_AVX2 ((attn__x86_features() & ATTN_X86_AVX2_FMA) != 0)
#else
#define ATTN_KERNELS_AVX512 NULL
#define ATTN_KERNELS_AVX2 NULL
#define ATTN_USABLE_AVX512 0
#define ATTN_USABLE_AVX2 0
#endif
#if ATTN_ARCH_NEON
extern const attn_kernels attn__kernels_neon;
#define ATTN_KERNELS_NEON &attn__kernels_neon
#define ATTN_USABLE_NEON 1 /* part of the AArch64 base ISA */
#else
#define ATTN_KERNELS_NEON NULL
#define ATTN_USABLE_NEON 0
#endif
extern const attn_kernels attn__kernels_port; /* isa/portable.c         */
#if ATTN_HAVE_PORT_WIDE
extern const attn_kernels attn__kernels_portw; /* isa/portable_wide.c   */
#endif

/* "portable": the plain C kernels, built for AVX2 + FMA where this build
 * and the CPU have them (the same bits), else for the base architecture;
 * "baseline": always the latter                                          */
#define ATTN_ISA_LIST(X)                                                       \
    X(AMX, "amx", ATTN_KERNELS_AMX, ATTN_USABLE_AMX, 1)                        \
    X(AVX512, "avx512", ATTN_KERNELS_AVX512, ATTN_USABLE_AVX512, 0)            \
    X(AVX2, "avx2", ATTN_KERNELS_AVX2, ATTN_USABLE_AVX2, 0)                    \
    X(NEON, "neon", ATTN_KERNELS_NEON, ATTN_USABLE_NEON, 0)                    \
    X(PORTABLE, "portable", attn__kernels_portable(), 1, 0)                    \
    X(BASELINE, "baseline", &attn__kernels_port, 1, 0)

typedef enum {
#define X(id, name, kern, usable, opt_in) ATTN_ISA_##id,
    ATTN_ISA_LIST(X)
#undef X
    ATTN_ISA_COUNT
} attn_isa_id;

const attn_kernels *attn__kernels_portable(void);

/* the set the kernels use now, and its table                            */
attn_isa_id attn__isa(void);
const attn_kernels *attn__kernels(void);
/* a set's table (NULL: not usable here)                                 */
const attn_kernels *attn__kernels_of(attn_isa_id id);

#endif /* ATTNPY_RUNTIME_ISA_H */
