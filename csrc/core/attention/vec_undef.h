/*
 * attention/vec_undef.h -- the end of an attention template (tile.h,
 * decode_tile.h): #undef the parameters attention/vec_<isa>.h defined, so
 * the next element type or template starts clean. Not include-guarded.
 */
#undef T
#undef VT
#undef W
#undef SFX
#undef VZERO
#undef VSET1
#undef VLOADU
#undef VSTOREU
#undef VFMA
#undef VMUL
#undef VADD
#undef VSUB
#undef VMAX
#undef VEXP
#undef VSAFE
#undef VRSUM
#undef VTANH
#undef VTRANS
#undef VLOAD_F16
#undef VLOAD_BF16
#undef VSTORE_F16
#undef VSTORE_BF16
