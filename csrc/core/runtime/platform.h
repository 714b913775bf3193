/*
 * runtime/platform.h -- what differs between compilers and systems, in one
 * place (gcc / clang on Linux and macOS, mingw-w64 gcc, MSVC / clang-cl).
 *
 *   ATTN_INLINE      force inlining (always_inline / __forceinline)
 *   ATTN_NOINLINE    never inline (a rare path kept out of a hot loop's
 *                    function, so its locals can stay in registers)
 *   ATTN_TARGET(s)   compile one function for an instruction set: gcc's
 *                    and clang's target("..."); nothing for MSVC, which
 *                    emits any intrinsic without a flag
 *   ATTN_ARCH_X86    x86 / x86-64 with a compiler that has the AVX2 and
 *                    AVX-512 intrinsics and a way to target them per
 *                    function (gcc, clang, clang-cl, MSVC)
 *   ATTN_ARCH_NEON   AArch64 (Advanced SIMD is part of the base ISA, so
 *                    the NEON path needs no run-time check there)
 *
 * and the few system services the core needs (runtime/clock.c,
 * runtime/cpuid.c): a monotonic clock and the x86 feature bits.
 */
#ifndef ATTNPY_PLATFORM_H
#define ATTNPY_PLATFORM_H

/* ATTN_NOCLONE: no copy specialised for a call site's constant arguments
 * (gcc's IPA-CP; a clone of the AVX2 float64 score kernel ran 5% slower
 * than the function itself); other compilers make no such clones        */
#if defined(__GNUC__) && !defined(__clang__)
#define ATTN_NOCLONE __attribute__((noclone))
#else
#define ATTN_NOCLONE
#endif
#if defined(__GNUC__) || defined(__clang__)
#define ATTN_INLINE inline __attribute__((always_inline))
#define ATTN_NOINLINE __attribute__((noinline, cold))
#define ATTN_TARGET(s) __attribute__((target(s)))
#define ATTN_PREFETCH(p) __builtin_prefetch((p), 0, 3)
#define ATTN_PREFETCH_L2(p) __builtin_prefetch((p), 0, 2) /* L2, not L1 */
#elif defined(_MSC_VER)
#define ATTN_INLINE __forceinline
#define ATTN_NOINLINE __declspec(noinline)
#define ATTN_TARGET(s)
#define ATTN_PREFETCH(p) ((void)(p))
#define ATTN_PREFETCH_L2(p) ((void)(p))
#else
#define ATTN_INLINE inline
#define ATTN_NOINLINE
#define ATTN_TARGET(s)
#define ATTN_PREFETCH(p) ((void)(p))
#define ATTN_PREFETCH_L2(p) ((void)(p))
#endif

#if (defined(__x86_64__) || defined(__i386__) || defined(_M_X64)             \
     || defined(_M_IX86))                                                     \
    && (defined(__GNUC__) || defined(__clang__) || defined(_MSC_VER))
#define ATTN_ARCH_X86 1
#else
#define ATTN_ARCH_X86 0
#endif

#if defined(__aarch64__) || defined(_M_ARM64)
#define ATTN_ARCH_NEON 1
#else
#define ATTN_ARCH_NEON 0
#endif

/* monotonic time in nanoseconds (runtime/clock.c)                         */
long long attn__now_ns(void);

/* x86 features usable by this process: runtime/isa.h (the bits, beside
 * the instruction sets that need them), runtime/cpuid.c                 */
int attn__x86_features(void);

#endif /* ATTNPY_PLATFORM_H */
