/*
 * simd/undef.h -- the end of a template over the SIMD primitives: #undef
 * what simd/vec_<isa>.h and simd/math.h defined, so the next element type
 * or template starts clean. Not include-guarded.
 */
#undef T
#undef VT
#undef VM
#undef W
#undef SFX
#undef ATTR
#undef SIMD_T_F64
#undef VI_
#undef VFN_
#undef VZERO
#undef VSET1
#undef VLOADU
#undef VSTOREU
#undef VADD
#undef VSUB
#undef VMUL
#undef VDIV
#undef VFMA
#undef VFNMA
#undef VMAX
#undef VMIN
#undef VABS
#undef VORSIGN
#undef VLT
#undef VLE
#undef VEQ
#undef VSEL
#undef VPOW2T
#undef VGETEXP
#undef VGETMANT
#undef VRSUM
#undef VMASKN
#undef VLOADN
#undef VSTOREN
#undef SIMD_LOADN_BUF_
#undef VTRANS
#undef VLOAD_F16
#undef VLOAD_BF16
#undef VSTORE_F16
#undef VSTORE_BF16
#undef VLOADT_F32
#undef VLOADT_F16
#undef VLOADT_BF16
#undef VEXP
#undef VTANH
#undef VSAFE
