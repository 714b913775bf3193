/*
 * bench_amx_bf16.c -- does AMX's tdpbf16ps compute a pair chain
 * (vdpbf16ps's arithmetic, no longer in attnpy)? Not a test and not built by
 * tools/c_tests.sh: a probe for the benchmark results. Random 16 x 32
 * bfloat16 tiles (a third of them tiny, so partial sums are subnormal);
 * each of the 16 x 16 results is compared with the chain over its 16
 * pairs odd-then-even (vdpbf16ps), even-then-odd, and one rounding. Then
 * the time of one tdpbf16ps (4 independent sums) for tiles of 1 to 16
 * rows: the "amx" path's P V uses tiles of the call's few rows when it
 * decodes.
 *
 *   cc -O2 -mamx-tile -mamx-bf16 -mavx512f tests/c/bench_amx_bf16.c \
 *      -lm -o /tmp/bench_amx_bf16 && /tmp/bench_amx_bf16
 */
#define _GNU_SOURCE
#if defined(__linux__) && defined(__x86_64__) /* an x86 probe: elsewhere a stub (the cross builds compile every tests/c file) */
#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <time.h>
static float bf(uint16_t h){uint32_t u=(uint32_t)h<<16; float f; memcpy(&f,&u,4); return f;}
static uint32_t fb(float f){uint32_t u; memcpy(&u,&f,4); return u;}
static float ftz(float x){ return fpclassify(x)==FP_SUBNORMAL ? copysignf(0.f,x) : x; }
static uint16_t rnd16(int tiny){ uint16_t s=rand()&0x8000, m=rand()&0x7f; int e;
  int k=tiny?9:rand()%10; if(k<7) e=120+rand()%14; else if(k<9) e=rand()%255; else e=55+rand()%10;
  if(e==255) e=254;
  return s|(e<<7)|m; }
typedef struct { uint8_t palette, start; uint8_t res[14]; uint16_t colsb[16]; uint8_t rows[16]; } cfg_t;
int main(){
  if(syscall(SYS_arch_prctl, 0x1023, 18)){ perror("arch_prctl"); return 1; }
  cfg_t c; memset(&c,0,sizeof c); c.palette=1;
  for(int t=0;t<3;t++){ c.colsb[t]=64; c.rows[t]=16; }
  _tile_loadconfig(&c);
  long n=0, m_oe=0, m_eo=0, m_one=0;
  for(int it=0;it<3000;it++){
    int tiny = it%3==0;
    static uint16_t A[16][32], B[16][32]; static float C[16][16], C0[16][16];
    for(int i=0;i<16;i++)for(int j=0;j<32;j++){A[i][j]=rnd16(tiny);B[i][j]=rnd16(tiny);}
    for(int i=0;i<16;i++)for(int j=0;j<16;j++) C0[i][j]=0;
    _tile_loadd(0,C0,64); _tile_loadd(1,A,64); _tile_loadd(2,B,64);
    _tile_dpbf16ps(0,1,2); _tile_stored(0,C,64);
    for(int i=0;i<16;i++)for(int j=0;j<16;j++){
      /* score (i,j): pairs k: A[i][2k],A[i][2k+1] with B[k][2j],B[k][2j+1] */
      float oe=0, eo=0; double one=0;
      for(int k=0;k<16;k++){
        float a0=ftz(bf(A[i][2*k])),a1=ftz(bf(A[i][2*k+1])),b0=ftz(bf(B[k][2*j])),b1=ftz(bf(B[k][2*j+1]));
        oe=ftz(fmaf(a0,b0,ftz(fmaf(a1,b1,oe))));
        eo=ftz(fmaf(a1,b1,ftz(fmaf(a0,b0,eo))));
        one+=(double)a0*b0+(double)a1*b1;
      }
      if(!isfinite(C[i][j])) continue;
      n++; m_oe+=fb(oe)==fb(C[i][j]); m_eo+=fb(eo)==fb(C[i][j]); m_one+=fb((float)one)==fb(C[i][j]);
    }
  }
  _tile_release();
  printf("AMX tdpbf16ps: n %ld  = vdpbf16ps chain (odd then even) %ld  even then odd %ld  one rounding %ld\n",n,m_oe,m_eo,m_one);
  static uint16_t T[16][32] __attribute__((aligned(64)));
  for(int m=1;m<=16;m*=2){
    cfg_t d __attribute__((aligned(64))); memset(&d,0,sizeof d); d.palette=1;
    for(int t=0;t<8;t++){ d.colsb[t]=64; d.rows[t]=t<7?m:16; }
    _tile_loadconfig(&d);
    _tile_loadd(4,T,64); _tile_loadd(5,T,64); _tile_loadd(6,T,64); _tile_loadd(7,T,64);
    struct timespec t0,t1; const int reps=200000;
    clock_gettime(CLOCK_MONOTONIC,&t0);
    for(int i=0;i<reps;i++){ _tile_dpbf16ps(0,4,7); _tile_dpbf16ps(1,5,7); _tile_dpbf16ps(2,6,7); _tile_dpbf16ps(3,4,7); }
    clock_gettime(CLOCK_MONOTONIC,&t1);
    _tile_release();
    printf("tiles of %2d rows: %.2f ns per tdpbf16ps\n",m,((t1.tv_sec-t0.tv_sec)*1e9+(t1.tv_nsec-t0.tv_nsec))/reps/4.0);
  }
}

#else
#include <stdio.h>
int main(void)
{
    puts("bench_amx_bf16.c: Linux on x86-64 only");
    return 0;
}
#endif
