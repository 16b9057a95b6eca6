#include "compare/stats.h"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "compare/stats_common.h"
#include "compare/zip.h"

// The finite-pair kernel is written to auto-vectorise: GCC may reassociate its float sums there
// (every input is finite, sums are per 2048-element block), and on x86-64 Linux it is also built
// for AVX2 and picked at run time. Multiply-adds are never contracted implicitly (the excess
// |a - b| - rtol·|b| must round as NumPy's does); the native float64 pass asks for fused ones
// where rounding does not matter (Madd: the reciprocal's Newton step), built for AVX2 + FMA and
// picked at run time.
#if defined(__GNUC__) && !defined(__clang__)
#define DT_VECTOR_KERNEL                                                                   \
  __attribute__((optimize("O3", "no-trapping-math", "no-signed-zeros", "associative-math", \
                          "finite-math-only", "no-math-errno", "fp-contract=off")))
#if defined(__x86_64__) && defined(__linux__) && !defined(DT_NO_TARGET_CLONES)
#define DT_CLONES __attribute__((target_clones("avx2", "default")))
#define DT_FMA_DISPATCH 1
#define DT_TARGET_FMA __attribute__((target("avx2,fma")))
#else
#define DT_CLONES
#endif
#else
#define DT_VECTOR_KERNEL
#define DT_CLONES
#endif
#if defined(__clang__)
#pragma clang fp contract(off)  // Clang contracts within an expression by default (arm64).
#endif

// Helpers of the kernels are forced inline: GCC does not inline a function built with other
// optimisation options (the kernels' above) otherwise.
#define DT_INLINE __attribute__((always_inline)) inline

namespace dt::compare {

namespace {

using namespace detail;  // The layout, reader and thread split shared with complex_stats.cc.

// ---- Conversions to double -------------------------------------------------------------------

float HalfToFloatSlow(std::uint16_t h) {
  std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000) << 16;
  std::uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  std::uint32_t bits;
  if (exp == 0) {
    float f = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -f : f;
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float F8ToFloat(std::uint8_t v, int exp_bits, bool fn) {
  int mant_bits = 7 - exp_bits;
  int bias = (1 << (exp_bits - 1)) - 1;
  int sign = v >> 7;
  int exp = (v >> mant_bits) & ((1 << exp_bits) - 1);
  int mant = v & ((1 << mant_bits) - 1);
  float r;
  if (fn) {  // e4m3fn: no infinities, NaN only at S.1111.111.
    if (exp == 15 && mant == 7) return std::numeric_limits<float>::quiet_NaN();
  } else if (exp == (1 << exp_bits) - 1) {
    if (mant != 0) return std::numeric_limits<float>::quiet_NaN();
    return sign ? -INFINITY : INFINITY;
  }
  if (exp == 0) {
    r = std::ldexp(static_cast<float>(mant), 1 - bias - mant_bits);
  } else {
    r = std::ldexp(1.0f + static_cast<float>(mant) / static_cast<float>(1 << mant_bits),
                   exp - bias);
  }
  return sign ? -r : r;
}

// The other small floats: 1 sign, exp_bits exponent and mant_bits mantissa bits, exponent bias
// `bias`, no infinities. The FNUZ float8s (finite, no negative zero) use the negative-zero code
// 0x80 as their only NaN; the sub-byte floats (float4_e2m1fn, float6_*) have no NaN at all.
float SmallFloatToFloat(std::uint32_t v, int exp_bits, int mant_bits, int bias, bool fnuz) {
  std::uint32_t sign = (v >> (exp_bits + mant_bits)) & 1;
  int exp = static_cast<int>((v >> mant_bits) & ((1u << exp_bits) - 1));
  int mant = static_cast<int>(v & ((1u << mant_bits) - 1));
  if (fnuz && sign && exp == 0 && mant == 0) return std::numeric_limits<float>::quiet_NaN();
  // Subnormals (exp 0) have no implicit leading one and the exponent of exp 1.
  float r = exp == 0
                ? std::ldexp(static_cast<float>(mant), 1 - bias - mant_bits)
                : std::ldexp(static_cast<float>((1 << mant_bits) + mant), exp - bias - mant_bits);
  return sign ? -r : r;
}

// float8_e8m0fnu: an unsigned power of two 2^(code - 127), no zero, 0xff is NaN.
float E8M0ToFloat(std::uint8_t v) {
  return v == 0xff ? std::numeric_limits<float>::quiet_NaN() : std::ldexp(1.0f, v - 127);
}

struct Tables {
  std::vector<float> half;
  std::array<float, 256> e4m3{}, e5m2{}, e4m3fnuz{}, e5m2fnuz{}, e8m0{};
  std::array<float, 16> f4{};
  std::array<float, 64> f6e2m3{}, f6e3m2{};
  // The smallest float32 at or above Pow10()[k] (infinity past FLT_MAX): a float32 error e has
  // e >= Pow10()[k] exactly when e >= pow10f_up[k].
  std::array<float, kDecades + 2> pow10f_up{};
  // The histogram bin of a finite |x| from its float64 exponent field: bin_of[e] + (x >=
  // bin_thr[e]), the bin DecadeBins computes; the zero exponent is the zero bin, since the
  // difference of two float32 values is 0 or at least 2^-149, never a float64 subnormal.
  std::array<std::uint8_t, 2048> bin_of{};
  std::array<double, 2048> bin_thr{};
  Tables() : half(65536) {
    for (int k = 0; k < kDecades + 2; ++k) {
      double p = Pow10()[static_cast<std::size_t>(k)];
      float f = static_cast<float>(p);
      if (static_cast<double>(f) < p) f = std::nextafter(f, INFINITY);
      pow10f_up[static_cast<std::size_t>(k)] = f;
    }
    for (std::size_t e = 0; e < 2048; ++e) {
      std::int32_t d = ((static_cast<std::int32_t>(e) - 1023) * 78913) >> 18;
      d = std::clamp(d, kMinDecade, kMaxDecade - 1);
      std::int32_t k = d - kMinDecade;
      bin_of[e] = static_cast<std::uint8_t>(e == 0 ? kDecades : k);
      bin_thr[e] =
          e == 0 || k == kDecades - 1 ? INFINITY : Pow10()[static_cast<std::size_t>(k + 1)];
    }
    for (std::uint32_t i = 0; i < 65536; ++i)
      half[i] = HalfToFloatSlow(static_cast<std::uint16_t>(i));
    for (int i = 0; i < 256; ++i) {
      e4m3[i] = F8ToFloat(static_cast<std::uint8_t>(i), 4, true);
      e5m2[i] = F8ToFloat(static_cast<std::uint8_t>(i), 5, false);
      const auto u = static_cast<std::uint32_t>(i);
      e4m3fnuz[i] = SmallFloatToFloat(u, 4, 3, 8, true);
      e5m2fnuz[i] = SmallFloatToFloat(u, 5, 2, 16, true);
      e8m0[i] = E8M0ToFloat(static_cast<std::uint8_t>(i));
      if (i < 16) f4[i] = SmallFloatToFloat(u, 2, 1, 1, false);
      if (i < 64) {
        f6e2m3[i] = SmallFloatToFloat(u, 2, 3, 1, false);
        f6e3m2[i] = SmallFloatToFloat(u, 3, 2, 3, false);
      }
    }
  }
};

const Tables& T() {
  static const Tables t;
  return t;
}

template <class U>
U Swap(U v) {
  if constexpr (sizeof(U) == 2) return static_cast<U>(__builtin_bswap16(v));
  if constexpr (sizeof(U) == 4) return static_cast<U>(__builtin_bswap32(v));
  if constexpr (sizeof(U) == 8) return static_cast<U>(__builtin_bswap64(v));
  return v;
}

template <class Raw, class F>
void ConvertLoop(const unsigned char* src, std::size_t n, bool swap, double* out, F f) {
  Raw tmp[256];
  for (std::size_t i = 0; i < n; i += 256) {
    std::size_t k = std::min<std::size_t>(256, n - i);
    std::memcpy(tmp, src + i * sizeof(Raw), k * sizeof(Raw));
    if (swap) {
      for (std::size_t j = 0; j < k; ++j) tmp[j] = Swap(tmp[j]);
    }
    for (std::size_t j = 0; j < k; ++j) out[i + j] = f(tmp[j]);
  }
}

}  // namespace

// Shared with complex_stats.cc, which converts the components of complex elements with it.
namespace {

// The floating-point dtypes (IEEE, bfloat16, the float8 / float6 / float4 formats by table).
void ConvertFloat(DType dtype, bool swap, const unsigned char* src, std::size_t n, double* out) {
  switch (dtype) {
    case DType::kF64:
      return ConvertLoop<std::uint64_t>(src, n, swap, out, [](std::uint64_t v) {
        double d;
        std::memcpy(&d, &v, 8);
        return d;
      });
    case DType::kF32:
      if (!swap) {
        const float* f = reinterpret_cast<const float*>(src);
        if (reinterpret_cast<std::uintptr_t>(src) % alignof(float) == 0) {
          for (std::size_t i = 0; i < n; ++i) out[i] = f[i];
          return;
        }
      }
      return ConvertLoop<std::uint32_t>(src, n, swap, out, [](std::uint32_t v) {
        float d;
        std::memcpy(&d, &v, 4);
        return static_cast<double>(d);
      });
    case DType::kF16: {
      const float* t = T().half.data();
      return ConvertLoop<std::uint16_t>(src, n, swap, out,
                                        [t](std::uint16_t v) { return static_cast<double>(t[v]); });
    }
    case DType::kBF16:
      return ConvertLoop<std::uint16_t>(src, n, swap, out, [](std::uint16_t v) {
        std::uint32_t b = static_cast<std::uint32_t>(v) << 16;
        float d;
        std::memcpy(&d, &b, 4);
        return static_cast<double>(d);
      });
    case DType::kF8E4M3: {
      const float* t = T().e4m3.data();
      for (std::size_t i = 0; i < n; ++i) out[i] = t[src[i]];
      return;
    }
    case DType::kF8E5M2: {
      const float* t = T().e5m2.data();
      for (std::size_t i = 0; i < n; ++i) out[i] = t[src[i]];
      return;
    }
    case DType::kF8E4M3FNUZ:
    case DType::kF8E5M2FNUZ:
    case DType::kF8E8M0: {
      const float* t = dtype == DType::kF8E4M3FNUZ   ? T().e4m3fnuz.data()
                       : dtype == DType::kF8E5M2FNUZ ? T().e5m2fnuz.data()
                                                     : T().e8m0.data();
      for (std::size_t i = 0; i < n; ++i) out[i] = t[src[i]];
      return;
    }
    // Sub-byte floats are a little-endian bit stream, LSB first: element i is bits [w·i, w·i + w)
    // (float4: element 2k in the low nibble of byte k, as torch packs float4_e2m1fn_x2). src
    // starts at a byte boundary: readers hand over whole 2048-element blocks.
    case DType::kF4: {
      const float* t = T().f4.data();
      for (std::size_t i = 0; i < n; ++i) out[i] = t[(src[i >> 1] >> (4 * (i & 1))) & 0xf];
      return;
    }
    case DType::kF6E2M3:
    case DType::kF6E3M2: {
      const float* t = dtype == DType::kF6E2M3 ? T().f6e2m3.data() : T().f6e3m2.data();
      for (std::size_t i = 0; i < n; ++i) {
        std::size_t bit = 6 * i, byte = bit >> 3, shift = bit & 7;
        unsigned v = src[byte] >> shift;
        if (shift > 2) v |= static_cast<unsigned>(src[byte + 1]) << (8 - shift);  // Straddles.
        out[i] = t[v & 0x3f];
      }
      return;
    }
    default:
      DT_CHECK(!"ConvertFloat takes floating-point dtypes");
  }
}

// The integer dtypes and bool.
void ConvertInteger(DType dtype, bool swap, const unsigned char* src, std::size_t n, double* out) {
  switch (dtype) {
    case DType::kI64:
      return ConvertLoop<std::uint64_t>(src, n, swap, out, [](std::uint64_t v) {
        return static_cast<double>(static_cast<std::int64_t>(v));
      });
    case DType::kI32:
      return ConvertLoop<std::uint32_t>(src, n, swap, out, [](std::uint32_t v) {
        return static_cast<double>(static_cast<std::int32_t>(v));
      });
    case DType::kI16:
      return ConvertLoop<std::uint16_t>(src, n, swap, out, [](std::uint16_t v) {
        return static_cast<double>(static_cast<std::int16_t>(v));
      });
    case DType::kI8:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::int8_t>(src[i]);
      return;
    case DType::kU64:
      return ConvertLoop<std::uint64_t>(src, n, swap, out,
                                        [](std::uint64_t v) { return static_cast<double>(v); });
    case DType::kU32:
      return ConvertLoop<std::uint32_t>(src, n, swap, out,
                                        [](std::uint32_t v) { return static_cast<double>(v); });
    case DType::kU16:
      return ConvertLoop<std::uint16_t>(src, n, swap, out,
                                        [](std::uint16_t v) { return static_cast<double>(v); });
    case DType::kU8:
      for (std::size_t i = 0; i < n; ++i) out[i] = src[i];
      return;
    case DType::kBool:
      for (std::size_t i = 0; i < n; ++i) out[i] = src[i] != 0 ? 1.0 : 0.0;
      return;
    default:
      DT_CHECK(!"ConvertInteger takes integer dtypes");
  }
}

}  // namespace

void detail::Convert(DType dtype, bool swap, const unsigned char* src, std::size_t n, double* out) {
  DT_CHECK(!IsComplex(dtype) && "ComputeStats sends complex pairs to ComputeComplexStats");
  if (IsFloat(dtype))
    ConvertFloat(dtype, swap, src, n, out);
  else
    ConvertInteger(dtype, swap, src, n, out);
}

namespace {

// ---- Accumulation ----------------------------------------------------------------------------

struct Acc : AccCommon {
  double mean_a = 0, mean_b = 0, m2a = 0, m2b = 0, cab = 0;  // Chan's parallel moments.

  void MergeMoments(std::uint64_t nb, double ma, double mb, double m2a_b, double m2b_b,
                    double cab_b) {
    if (nb == 0) return;
    double na = static_cast<double>(n), nbd = static_cast<double>(nb), tot = na + nbd;
    double da = ma - mean_a, db = mb - mean_b;
    mean_a += da * nbd / tot;
    mean_b += db * nbd / tot;
    m2a += m2a_b + da * da * na * nbd / tot;
    m2b += m2b_b + db * db * na * nbd / tot;
    cab += cab_b + da * db * na * nbd / tot;
    n += nb;
  }

  void Merge(const Acc& o) {
    MergeCommon(o);
    MergeMoments(o.n, o.mean_a, o.mean_b, o.m2a, o.m2b, o.cab);
  }
};

struct BlockOut {
  double se, sq, srel, sex, sa, sb, saa, sbb, sab, m2a, m2b, cab;
  double maxe, maxrel, maxex, mina, maxa, minb, maxb;
  double eq, nrel, zbe, out;
};

// a·b + c, fused (one rounding) where the hardware has it.
template <bool kFma>
DT_INLINE double Madd(double a, double b, double c) {
  if constexpr (kFma) {
    return __builtin_fma(a, b, c);
  } else {
    return a * b + c;
  }
}

// The error terms of one pair as NumPy computes them in float64 (the float64 path and the
// native lanes share them, so both agree bit for bit).
struct ErrTerms {
  double d, e, ab, rel, ex;
};

DT_INLINE ErrTerms Terms(double x, double y, double rtol) {
  double d = x - y;
  double e = std::fabs(d), ab = std::fabs(y);
  return {d, e, ab, ab > 0 ? e / ab : 0.0, e - rtol * ab};
}

// The same with the relative error from `r0`, the float32 reciprocal of |y| (0 for y = 0), and
// one Newton step in float64: the float32 quotient is within 2^-24 of 1/|y| for |y| in
// [2^-126, 2^126], the step squares that, so the relative error is below 2^-47 (and r0 = 0
// stays 0, the relative error of y = 0). The float64 division it replaces costs several times
// more on common x86-64 cores (AMD Zen 2: 5 cycles per 4 lanes, against 3.5 per 8 for the
// float32 one, which the float32 pass does off this pass's critical path) and dominated it.
template <bool kFma>
DT_INLINE ErrTerms TermsRecip(double x, double y, float r0, double rtol) {
  double d = x - y;
  double e = std::fabs(d), ab = std::fabs(y);
  double r = r0;
  r = Madd<kFma>(r, Madd<kFma>(-ab, r, 1.0), r);
  return {d, e, ab, e * r, e - rtol * ab};
}

// The element-wise tolerance test of either rule.
template <bool kEither>
DT_INLINE bool Outside(const ErrTerms& t, double atol, double rtol) {
  if constexpr (kEither) {
    return t.e > atol && (t.ab == 0 || t.rel > rtol);
  } else {
    return t.ex > atol;
  }
}

// The finite-pair kernel: every value of a and b is finite here.
template <bool kEither>
DT_CLONES DT_VECTOR_KERNEL void FiniteBlock(const double* __restrict a, const double* __restrict b,
                                            std::size_t n, double atol, double rtol, BlockOut& o) {
  double se = 0, sq = 0, srel = 0, sex = 0, sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
  double maxe = 0, maxrel = 0, maxex = -DBL_MAX, mina = DBL_MAX, maxa = -DBL_MAX, minb = DBL_MAX,
         maxb = -DBL_MAX;
  double eq = 0, nrel = 0, zbe = 0, out = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double x = a[i], y = b[i];
    ErrTerms t = Terms(x, y, rtol);
    se += t.e;
    sq += t.d * t.d;
    srel += t.rel;
    sex += t.ex;
    sa += x;
    sb += y;
    saa += x * x;
    sbb += y * y;
    sab += x * y;
    maxe = t.e > maxe ? t.e : maxe;
    maxrel = t.rel > maxrel ? t.rel : maxrel;
    maxex = t.ex > maxex ? t.ex : maxex;
    mina = x < mina ? x : mina;
    maxa = x > maxa ? x : maxa;
    minb = y < minb ? y : minb;
    maxb = y > maxb ? y : maxb;
    eq += x == y ? 1.0 : 0.0;
    nrel += t.ab > 0 ? 1.0 : 0.0;
    zbe += (t.ab == 0 && t.e > 0) ? 1.0 : 0.0;
    out += Outside<kEither>(t, atol, rtol) ? 1.0 : 0.0;
  }
  double ma = sa / static_cast<double>(n), mb = sb / static_cast<double>(n);
  double m2a = 0, m2b = 0, cab = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double da = a[i] - ma, db = b[i] - mb;
    m2a += da * da;
    m2b += db * db;
    cab += da * db;
  }
  o = BlockOut{se,   sq,     srel,  sex,  sa,   sb,   saa,  sbb, sab,  m2a, m2b, cab,
               maxe, maxrel, maxex, mina, maxa, minb, maxb, eq,  nrel, zbe, out};
}

// The decade bin of each |a - b| (kDecades for an exact zero), from the exponent bits: the
// binary exponent gives floor(log10) up to one, settled by one comparison with a power of ten.
DT_CLONES DT_VECTOR_KERNEL void DecadeBins(const double* __restrict a, const double* __restrict b,
                                           std::size_t n, const double* __restrict pow10,
                                           std::uint8_t* __restrict bins) {
  for (std::size_t i = 0; i < n; ++i) {
    double e = std::fabs(a[i] - b[i]);
    std::uint64_t bits;
    std::memcpy(&bits, &e, 8);
    std::int32_t p = static_cast<std::int32_t>(bits >> 52) - 1023;
    // floor(p * log10(2)) for |p| < 1650 (the constant is log10(2) * 2^18, rounded).
    std::int32_t d = (p * 78913) >> 18;
    d = d < kMinDecade ? kMinDecade : d > kMaxDecade - 1 ? kMaxDecade - 1 : d;
    std::int32_t k = d - kMinDecade;
    k += e >= pow10[k + 1] ? 1 : 0;
    k = k > kDecades - 1 ? kDecades - 1 : k;
    bins[i] = static_cast<std::uint8_t>(bits == 0 ? kDecades : (bits >> 52) == 0 ? 0 : k);
  }
}

// True when every value of both blocks is finite (an all-ones exponent marks inf and NaN); bit
// tests, so the fast-math options of the kernel cannot fold them away.
DT_CLONES DT_VECTOR_KERNEL bool AllFinite(const double* __restrict a, const double* __restrict b,
                                          std::size_t n) {
  std::uint64_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t x, y;
    std::memcpy(&x, &a[i], 8);
    std::memcpy(&y, &b[i], 8);
    bad |= static_cast<std::uint64_t>((x & 0x7ff0000000000000ull) == 0x7ff0000000000000ull) |
           static_cast<std::uint64_t>((y & 0x7ff0000000000000ull) == 0x7ff0000000000000ull);
  }
  return bad == 0;
}

// Largest distance in units in the last place, in the ULP dtype, over finite pairs.
template <DType U>
DT_CLONES DT_VECTOR_KERNEL std::uint64_t MaxUlp(const double* __restrict a,
                                                const double* __restrict b, std::size_t n) {
  std::uint64_t m = 0;
  std::uint32_t m32 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t x, y;
    if constexpr (U == DType::kF64) {
      std::uint64_t ba, bb;
      std::memcpy(&ba, &a[i], 8);
      std::memcpy(&bb, &b[i], 8);
      constexpr std::uint64_t kMag = ~(std::uint64_t{1} << 63);
      x = (ba >> 63) ? -static_cast<std::int64_t>(ba & kMag) : static_cast<std::int64_t>(ba);
      y = (bb >> 63) ? -static_cast<std::int64_t>(bb & kMag) : static_cast<std::int64_t>(bb);
    } else {
      // 32-bit lanes: ordered values differ by less than 2^32, so unsigned differences fit.
      float fa = static_cast<float>(a[i]), fb = static_cast<float>(b[i]);
      std::uint32_t ba, bb;
      std::memcpy(&ba, &fa, 4);
      std::memcpy(&bb, &fb, 4);
      if constexpr (U == DType::kBF16) {
        ba = (ba + 0x7fffu + ((ba >> 16) & 1u)) >> 16;
        bb = (bb + 0x7fffu + ((bb >> 16) & 1u)) >> 16;
        ba = (ba & 0x8000u) ? 0x8000u - (ba & 0x7fffu) : 0x8000u + ba;
        bb = (bb & 0x8000u) ? 0x8000u - (bb & 0x7fffu) : 0x8000u + bb;
      } else {
        ba = (ba >> 31) ? 0x80000000u - (ba & 0x7fffffffu) : 0x80000000u + ba;
        bb = (bb >> 31) ? 0x80000000u - (bb & 0x7fffffffu) : 0x80000000u + bb;
      }
      std::uint32_t d32 = ba >= bb ? ba - bb : bb - ba;
      m32 = d32 > m32 ? d32 : m32;
      continue;
    }
    std::uint64_t d = x >= y ? static_cast<std::uint64_t>(x) - static_cast<std::uint64_t>(y)
                             : static_cast<std::uint64_t>(y) - static_cast<std::uint64_t>(x);
    m = d > m ? d : m;
  }
  return m > m32 ? m : m32;
}

std::uint64_t MaxUlpIn(DType u, const double* a, const double* b, std::size_t n) {
  switch (u) {
    case DType::kF64:
      return MaxUlp<DType::kF64>(a, b, n);
    case DType::kF32:
      return MaxUlp<DType::kF32>(a, b, n);
    case DType::kBF16:
      return MaxUlp<DType::kBF16>(a, b, n);
    default: {
      std::uint64_t m = 0;
      for (std::size_t i = 0; i < n; ++i) {
        std::int64_t x = OrderedIn(u, a[i]), y = OrderedIn(u, b[i]);
        std::uint64_t d = x >= y ? static_cast<std::uint64_t>(x) - static_cast<std::uint64_t>(y)
                                 : static_cast<std::uint64_t>(y) - static_cast<std::uint64_t>(x);
        m = d > m ? d : m;
      }
      return m;
    }
  }
}

// ---- Native float32 lanes ---------------------------------------------------------------------

// Element loaders of the native kernels, straight from the tensor bytes (memcpy: any alignment):
// float32 as it is, bfloat16 widened by a 16-bit shift in the register, so neither needs a
// separate widening pass through a buffer.
struct F32Src {
  DT_INLINE static float At(const unsigned char* p, std::size_t i) {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
};
struct BF16Src {
  DT_INLINE static float At(const unsigned char* p, std::size_t i) {
    std::uint16_t v;
    std::memcpy(&v, p + 2 * i, 2);
    std::uint32_t bits = static_cast<std::uint32_t>(v) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
};

// Per-block results of the native kernel for float32, bfloat16 and float16 pairs of one dtype.
// s1*, s2*, sab are sums of the values shifted by a per-block constant (see Kernel::Native).
struct NativeOut {
  double se, sq, srel, sex, s1a, s1b, s2a, s2b, sab, maxe, maxrel, maxex;
  float mina, maxa, minb, maxb;
  std::uint32_t eq, nrel, zbe, out, ulp, bad;
  std::uint32_t mine_m1;   // Bits of the smallest nonzero float32 |a - b|, minus one.
  std::uint32_t minab_m1;  // Bits of the smallest nonzero |b|, minus one.
  std::uint32_t maxe_f;    // Bits of the largest float32 |a - b|.
  double inexact;          // Pairs whose float32 |a - b| is not their exact |a - b|.
};

// The sums, extremes and counts that both block kernels (BlockOut, NativeOut) report under the
// same names, into the tensor's accumulator.
template <typename Out>
void MergeBlock(const Out& o, Acc& acc) {
  acc.sum_e += o.se;
  acc.sum_sq += o.sq;
  acc.sum_rel += o.srel;
  acc.sum_ex += o.sex;
  acc.max_rel = std::max(acc.max_rel, o.maxrel);
  acc.max_ex = std::max(acc.max_ex, o.maxex);
  acc.min_a = std::min(acc.min_a, static_cast<double>(o.mina));
  acc.max_a = std::max(acc.max_a, static_cast<double>(o.maxa));
  acc.min_b = std::min(acc.min_b, static_cast<double>(o.minb));
  acc.max_b = std::max(acc.max_b, static_cast<double>(o.maxb));
  acc.equal += static_cast<std::uint64_t>(o.eq);
  acc.n_rel += static_cast<std::uint64_t>(o.nrel);
  acc.zero_b_err += static_cast<std::uint64_t>(o.zbe);
  acc.outside += static_cast<std::uint64_t>(o.out);
}

// The ULP-ordered integer of a float32 value that is exactly representable in U: counting in U
// needs no rounding, so the distance comes from the bits (bfloat16: the upper half; float16: its
// exponent rebased, or for a subnormal half its integer multiple of 2^-24, by shifts only).
template <DType U>
DT_INLINE std::uint32_t OrderedBits(std::uint32_t bits) {
  std::uint32_t mag = bits & 0x7fffffffu, neg = bits >> 31;
  if constexpr (U == DType::kF32) {
    return neg ? 0x80000000u - mag : 0x80000000u + mag;
  } else {
    std::uint32_t h;
    if constexpr (U == DType::kBF16) {
      h = mag >> 16;
    } else {
      std::uint32_t exp = mag >> 23;
      std::uint32_t shift = exp >= 126 ? 0u : (126u - exp > 31u ? 31u : 126u - exp);
      std::uint32_t sub = (0x800000u | (mag & 0x7fffffu)) >> shift;
      h = mag < 0x38800000u ? sub : (mag >> 13) - (112u << 10);  // 0x38800000: 2^-14.
    }
    return neg ? 0x8000u - h : 0x8000u + h;
  }
}

// The float32 and integer lanes of a block (values exact in U, eight per AVX2 vector): the
// finiteness probe, the extremes, the equality counts, the ULP distance from the bits and the
// float32 errors |a - b| (rounded: exact for most pairs, and then the histogram counts them
// eight to a vector), their extremes, and the float32 reciprocals of |b|. `bad` is
// nonzero when some value is not finite; the caller then discards the block.
// With kErrOnly (bfloat16, whose other lanes NativeBits16 takes), only the errors and the
// reciprocals, and the values widened to float32 into wa, wb for the float64 pass: read there
// from 16-bit lanes, GCC would vectorise it sixteen elements at a time, spilling everything.
template <DType U, class Src, bool kErrOnly = false>
DT_CLONES DT_VECTOR_KERNEL void NativeBits(const unsigned char* __restrict a,
                                           const unsigned char* __restrict b, std::size_t n,
                                           float* __restrict rcp, float* __restrict errf,
                                           float* __restrict wa, float* __restrict wb,
                                           NativeOut& o) {
  float mina = FLT_MAX, maxa = -FLT_MAX, minb = FLT_MAX, maxb = -FLT_MAX;
  std::uint32_t eq = 0, nrel = 0, zbe = 0, ulp = 0, big = 0, mine = 0xffffffffu,
                minab = 0xffffffffu, maxe = 0;
  for (std::size_t i = 0; i < n; ++i) {
    float x = Src::At(a, i), y = Src::At(b, i);
    std::uint32_t bx, by, be;
    std::memcpy(&bx, &x, 4);
    std::memcpy(&by, &y, 4);
    std::uint32_t ma = bx & 0x7fffffffu, mb = by & 0x7fffffffu;
    float ef = x - y;
    std::memcpy(&be, &ef, 4);
    be &= 0x7fffffffu;
    std::memcpy(&errf[i], &be, 4);
    maxe = be > maxe ? be : maxe;
    be -= 1u;  // A zero error wraps to the largest value, out of the minimum.
    mine = be < mine ? be : mine;
    float ay;
    std::memcpy(&ay, &mb, 4);
    rcp[i] = y != 0 ? 1.0f / ay : 0.0f;
    if constexpr (kErrOnly) {
      wa[i] = x;
      wb[i] = y;
      continue;
    }
    // The largest magnitude's bits: those of infinity or above (NaN) mark a bad block.
    std::uint32_t mm = ma > mb ? ma : mb;
    big = mm > big ? mm : big;
    mina = x < mina ? x : mina;
    maxa = x > maxa ? x : maxa;
    minb = y < minb ? y : minb;
    maxb = y > maxb ? y : maxb;
    eq += x == y ? 1u : 0u;
    nrel += y != 0 ? 1u : 0u;
    zbe += (y == 0 && x != y) ? 1u : 0u;
    std::uint32_t du;
    if constexpr (U == DType::kF16) {
      std::uint32_t oa = OrderedBits<U>(bx), ob = OrderedBits<U>(by);
      du = oa >= ob ? oa - ob : ob - oa;
    } else {
      // Sign-magnitude: the magnitudes add across zero and subtract on one side of it.
      std::int32_t dm = static_cast<std::int32_t>(ma - mb);  // Both below 2^31: no overflow.
      std::uint32_t same = static_cast<std::uint32_t>(dm < 0 ? -dm : dm);
      du = static_cast<std::int32_t>(bx ^ by) < 0 ? ma + mb : same;
    }
    ulp = du > ulp ? du : ulp;
    std::uint32_t bb = mb - 1u;
    minab = bb < minab ? bb : minab;
  }
  o.mine_m1 = mine;
  o.maxe_f = maxe;
  if constexpr (kErrOnly) return;
  o.mina = mina;
  o.maxa = maxa;
  o.minb = minb;
  o.maxb = maxb;
  o.eq = eq;
  o.nrel = nrel;
  o.zbe = zbe;
  o.ulp = ulp;
  o.bad = big >= 0x7f800000u;
  o.minab_m1 = minab;
}

// The bit-pattern statistics of a bfloat16 block in 16-bit lanes (sixteen per AVX2 vector, twice
// what float32 lanes hold): what NativeBits computes besides the errors and reciprocals, from
// the sign-magnitude bits (values ordered as integers: -magnitude for negatives, so ±0 are one).
template <class Src>
DT_CLONES DT_VECTOR_KERNEL void NativeBits16(const unsigned char* __restrict a,
                                             const unsigned char* __restrict b, std::size_t n,
                                             NativeOut& o) {
  std::int16_t mina = INT16_MAX, maxa = INT16_MIN, minb = INT16_MAX, maxb = INT16_MIN;
  // Counts per lane stay below 2^16 (n <= 2048).
  std::uint16_t eq = 0, nrel = 0, zbe = 0, ulp = 0, big = 0, minab = 0xffff;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t bx, by;
    std::memcpy(&bx, a + 2 * i, 2);
    std::memcpy(&by, b + 2 * i, 2);
    std::uint16_t ma = bx & 0x7fff, mb = by & 0x7fff;
    std::uint16_t mm = ma > mb ? ma : mb;
    big = mm > big ? mm : big;
    std::int16_t oa = static_cast<std::int16_t>((bx & 0x8000) ? -ma : ma);
    std::int16_t ob = static_cast<std::int16_t>((by & 0x8000) ? -mb : mb);
    mina = oa < mina ? oa : mina;
    maxa = oa > maxa ? oa : maxa;
    minb = ob < minb ? ob : minb;
    maxb = ob > maxb ? ob : maxb;
    eq = static_cast<std::uint16_t>(eq + (oa == ob ? 1 : 0));
    nrel = static_cast<std::uint16_t>(nrel + (mb != 0 ? 1 : 0));
    zbe = static_cast<std::uint16_t>(zbe + ((mb == 0 && ma != 0) ? 1 : 0));
    std::uint16_t same = static_cast<std::uint16_t>((ma > mb ? ma : mb) - (ma < mb ? ma : mb));
    std::uint16_t du = static_cast<std::uint16_t>(((bx ^ by) & 0x8000) ? ma + mb : same);
    ulp = du > ulp ? du : ulp;
    std::uint16_t bb = static_cast<std::uint16_t>(mb - 1);
    minab = bb < minab ? bb : minab;
  }
  auto value = [](std::int16_t v) {
    std::uint32_t bits = v < 0 ? 0x80000000u | (static_cast<std::uint32_t>(-v) << 16)
                               : static_cast<std::uint32_t>(v) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  };
  o.mina = value(mina);
  o.maxa = value(maxa);
  o.minb = value(minb);
  o.maxb = value(maxb);
  o.eq = eq;
  o.nrel = nrel;
  o.zbe = zbe;
  o.ulp = ulp;
  o.bad = big >= 0x7f80;
  o.minab_m1 = (static_cast<std::uint32_t>(static_cast<std::uint16_t>(minab + 1)) << 16) - 1u;
}

// The float64 lanes of a block: the error terms NumPy computes in float64, bit for bit (the
// float32 difference is not exact, and the tolerance test must agree with NumPy's), their sums
// and maxima, and the moments as sums of the values shifted by (ka, kb), which folds what was a
// second pass over the block into this one; and how many float32 errors of NativeBits are not
// exact.
template <bool kRecip, bool kFma, class Src>
DT_INLINE void NativeErrBody(const unsigned char* __restrict a, const unsigned char* __restrict b,
                             std::size_t n, const float* __restrict rcp, double rtol, double ka,
                             double kb, const float* __restrict errf, NativeOut& o) {
  double se = 0, sq = 0, srel = 0, sex = 0, s1a = 0, s1b = 0, s2a = 0, s2b = 0, sab = 0;
  double maxrel = 0, maxex = -DBL_MAX, inexact = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double x = Src::At(a, i), y = Src::At(b, i);
    ErrTerms t = kRecip ? TermsRecip<kFma>(x, y, rcp[i], rtol) : Terms(x, y, rtol);
    se += t.e;
    sq += t.d * t.d;
    srel += t.rel;
    sex += t.ex;
    double xs = x - ka, ys = y - kb;
    s1a += xs;
    s1b += ys;
    s2a += xs * xs;
    s2b += ys * ys;
    sab += xs * ys;
    maxrel = t.rel > maxrel ? t.rel : maxrel;
    maxex = t.ex > maxex ? t.ex : maxex;
    inexact += static_cast<double>(errf[i]) != t.e ? 1.0 : 0.0;
  }
  o.se = se;
  o.sq = sq;
  o.srel = srel;
  o.sex = sex;
  o.s1a = s1a;
  o.s1b = s1b;
  o.s2a = s2a;
  o.s2b = s2b;
  o.sab = sab;
  o.maxrel = maxrel;
  o.maxex = maxex;
  o.inexact = inexact;
}

// Hardware fused multiply-add everywhere aarch64 runs; on x86-64 Linux (GCC) the FMA build
// below is picked at run time; elsewhere plain multiply and add.
#if defined(__aarch64__) || defined(__FMA__)
constexpr bool kHardFma = true;
#else
constexpr bool kHardFma = false;
#endif

template <bool kRecip, class Src>
DT_CLONES DT_VECTOR_KERNEL void NativeErrPlain(const unsigned char* __restrict a,
                                               const unsigned char* __restrict b, std::size_t n,
                                               const float* __restrict rcp, double rtol, double ka,
                                               double kb, const float* __restrict errf,
                                               NativeOut& o) {
  NativeErrBody<kRecip, kHardFma, Src>(a, b, n, rcp, rtol, ka, kb, errf, o);
}

#if defined(DT_FMA_DISPATCH)
template <bool kRecip, class Src>
DT_TARGET_FMA DT_VECTOR_KERNEL void NativeErrFma(const unsigned char* __restrict a,
                                                 const unsigned char* __restrict b, std::size_t n,
                                                 const float* __restrict rcp, double rtol,
                                                 double ka, double kb, const float* __restrict errf,
                                                 NativeOut& o) {
  NativeErrBody<kRecip, true, Src>(a, b, n, rcp, rtol, ka, kb, errf, o);
}

bool CpuFma() {
  static const bool fma = [] {
    __builtin_cpu_init();  // Static initialisers may run before libgcc's own.
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return fma;
}
#endif

template <bool kRecip, class Src>
void NativeErr(const unsigned char* a, const unsigned char* b, std::size_t n, const float* rcp,
               double rtol, double ka, double kb, const float* errf, NativeOut& o) {
#if defined(DT_FMA_DISPATCH)
  if (CpuFma()) return NativeErrFma<kRecip, Src>(a, b, n, rcp, rtol, ka, kb, errf, o);
#endif
  NativeErrPlain<kRecip, Src>(a, b, n, rcp, rtol, ka, kb, errf, o);
}

// How many pairs of a block fail the tolerance test: a second pass, for the few blocks whose
// largest error or excess says some might (so the first pass need not count).
template <bool kEither, class Src>
DT_CLONES DT_VECTOR_KERNEL std::uint32_t NativeOutside(const unsigned char* __restrict a,
                                                       const unsigned char* __restrict b,
                                                       std::size_t n, double atol, double rtol) {
  std::uint32_t out = 0;
  for (std::size_t i = 0; i < n; ++i) {
    out += Outside<kEither>(Terms(Src::At(a, i), Src::At(b, i), rtol), atol, rtol) ? 1u : 0u;
  }
  return out;
}

// Centred moments about the block means in a second pass over the cached block: the fallback
// for a block whose mean is far from its shift.
template <class Src>
DT_CLONES DT_VECTOR_KERNEL void NativeMoments(const unsigned char* __restrict a,
                                              const unsigned char* __restrict b, std::size_t n,
                                              double ma, double mb, double& m2a, double& m2b,
                                              double& cab) {
  double s2a = 0, s2b = 0, sab = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double da = static_cast<double>(Src::At(a, i)) - ma;
    double db = static_cast<double>(Src::At(b, i)) - mb;
    s2a += da * da;
    s2b += db * db;
    sab += da * db;
  }
  m2a = s2a;
  m2b = s2b;
  cab = sab;
}

// |a - b| of a block in float64 and its maximum: for the blocks where the float32 errors of
// NativeBits are not all exact.
template <class Src>
DT_CLONES DT_VECTOR_KERNEL double NativeAbsErr(const unsigned char* __restrict a,
                                               const unsigned char* __restrict b, std::size_t n,
                                               double* __restrict err) {
  double m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double e = std::fabs(static_cast<double>(Src::At(a, i)) - static_cast<double>(Src::At(b, i)));
    m = e > m ? e : m;
    err[i] = e;
  }
  return m;
}

// The largest relative error of a block, divided exactly: for the blocks whose approximate
// maximum (TermsRecip) might raise the running one.
template <class Src>
DT_CLONES DT_VECTOR_KERNEL double NativeMaxRel(const unsigned char* __restrict a,
                                               const unsigned char* __restrict b, std::size_t n) {
  double m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double rel = Terms(Src::At(a, i), Src::At(b, i), 0.0).rel;
    m = rel > m ? rel : m;
  }
  return m;
}

// The decade bin of each error of a native block (kDecades for zero). Scalar on purpose: the
// table loads would be gathers, slower than plain loads where AVX2 has them at all.
void ErrBins(const double* __restrict err, std::size_t n, std::uint8_t* __restrict bins) {
  const std::uint8_t* bin_of = T().bin_of.data();
  const double* bin_thr = T().bin_thr.data();
  for (std::size_t i = 0; i < n; ++i) {
    double e = err[i];
    std::uint64_t bits;
    std::memcpy(&bits, &e, 8);
    std::size_t x = static_cast<std::size_t>(bits >> 52);
    bins[i] = static_cast<std::uint8_t>(bin_of[x] + (e >= bin_thr[x] ? 1u : 0u));
  }
}

// How many of bins[0, n) equal j, in byte lanes over chunks short enough not to overflow them.
DT_CLONES DT_VECTOR_KERNEL std::uint64_t CountBin(const std::uint8_t* __restrict bins,
                                                  std::size_t n, std::uint8_t j) {
  constexpr std::size_t kChunk = 224;  // A multiple of 32 below 256.
  std::uint64_t total = 0;
  std::size_t i = 0;
  for (; i + kChunk <= n; i += kChunk) {
    std::uint8_t c = 0;
    for (std::size_t k = 0; k < kChunk; ++k) c = static_cast<std::uint8_t>(c + (bins[i + k] == j));
    total += c;
  }
  for (; i < n; ++i) total += bins[i] == j ? 1 : 0;
  return total;
}

// Adds a block's bins to `hist` (kDecades + 1 counters, the last for zero errors); `lo` and
// `hi` are the bins of its smallest nonzero and its largest error. One vector count per bin
// when they are few (the usual case), else increments.
void CountBins(const std::uint8_t* bins, std::size_t n, std::size_t lo, std::size_t hi,
               std::uint64_t* hist) {
  if (hi - lo < 16) {
    std::uint64_t counted = 0;
    for (std::size_t j = lo; j <= hi; ++j) {
      std::uint64_t c = CountBin(bins, n, static_cast<std::uint8_t>(j));
      hist[j] += c;
      counted += c;
    }
    hist[kDecades] += n - counted;
    return;
  }
  std::uint32_t h[4][kDecades + 1] = {};
  for (std::size_t i = 0; i < n; ++i) ++h[i & 3][bins[i]];
  for (std::size_t k = 0; k <= kDecades; ++k) hist[k] += h[0][k] + h[1][k] + h[2][k] + h[3][k];
}

// How many of err[0, n) are at or above each of K (4 or 8) thresholds: one load per K compares
// (n < 2^31).
template <int K, class V>
DT_CLONES DT_VECTOR_KERNEL void CountAtLeast(const V* __restrict err, std::size_t n,
                                             const V* __restrict t, std::int64_t* __restrict c) {
  static_assert(K == 4 || K == 8);
  // Counters as wide as the values, so the compare masks add straight in.
  using C = std::conditional_t<sizeof(V) == 4, std::int32_t, std::int64_t>;
  V t0 = t[0], t1 = t[1], t2 = t[2], t3 = t[3];
  V t4 = t[K - 4], t5 = t[K - 3], t6 = t[K - 2], t7 = t[K - 1];
  C c0 = 0, c1 = 0, c2 = 0, c3 = 0, c4 = 0, c5 = 0, c6 = 0, c7 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    V e = err[i];
    c0 += e >= t0 ? 1 : 0;
    c1 += e >= t1 ? 1 : 0;
    c2 += e >= t2 ? 1 : 0;
    c3 += e >= t3 ? 1 : 0;
    if constexpr (K == 8) {
      c4 += e >= t4 ? 1 : 0;
      c5 += e >= t5 ? 1 : 0;
      c6 += e >= t6 ? 1 : 0;
      c7 += e >= t7 ? 1 : 0;
    }
  }
  const std::int64_t all[8] = {c0, c1, c2, c3, c4, c5, c6, c7};
  for (int k = 0; k < K; ++k) c[k] = all[k];
}

// The decade histogram of a native block whose values are all finite, into acc: the bin of each
// error from two table loads by exponent and one comparison, then counted bin by bin with vector
// compares over the block's range of bins. `errf` holds the float32 errors, which stand for the
// float64 ones when `exact`; otherwise `err` holds the float64 errors (and is scratch space).
DT_INLINE void NativeDecades(const NativeOut& o, std::size_t n, bool exact, const float* errf,
                             double* err, Acc& acc) {
  std::uint64_t h[kDecades + 1] = {};
  h[kDecades] = o.eq;  // Every value is finite: the zero errors are the equal pairs.
  if (o.eq < n) {
    // The smallest error rounded to float32 (within 2^-24 of it, either way): its bin, one
    // lower when the rounding may have lifted it across the bin's lower edge.
    float minf;
    std::uint32_t mine_bits = o.mine_m1 + 1u;
    std::memcpy(&minf, &mine_bits, 4);
    const double mine = static_cast<double>(minf);
    std::size_t hi = DecadeBin(o.maxe), lo = DecadeBin(mine);
    if (lo > 0 && lo < kDecades && mine * (1 - 0x1p-23) < Pow10()[lo]) --lo;
    lo = std::min(lo, hi);
    if (hi - lo < 12) {
      // bin(e) >= j exactly when e >= the float64 10^j (1 <= j < kDecades), and for an exact
      // float32 error when it is at or above the float32 pow10f_up[j]: each bin's count is
      // the difference of the counts at or above its two edges.
      const double* pow10 = Pow10().data();
      const float* pow10f = T().pow10f_up.data();
      std::uint64_t above = n - o.eq;  // Errors in bins >= j, for j = lo.
      for (std::size_t j = lo + 1, k; j <= hi; j += k) {
        k = hi - j >= 4 ? 8 : 4;  // Edges j .. j + k - 1, padded past hi.
        std::int64_t c[8];
        if (exact) {
          float t[8];
          for (std::size_t q = 0; q < k; ++q) t[q] = j + q <= hi ? pow10f[j + q] : INFINITY;
          if (k == 8) {
            CountAtLeast<8>(errf, n, t, c);
          } else {
            CountAtLeast<4>(errf, n, t, c);
          }
        } else {
          double t[8];
          for (std::size_t q = 0; q < k; ++q) t[q] = j + q <= hi ? pow10[j + q] : DBL_MAX;
          if (k == 8) {
            CountAtLeast<8>(err, n, t, c);
          } else {
            CountAtLeast<4>(err, n, t, c);
          }
        }
        for (std::size_t q = 0; q < k && j + q <= hi; ++q) {
          std::uint64_t at_or_above = static_cast<std::uint64_t>(c[q]);
          h[j + q - 1] += above - at_or_above;
          above = at_or_above;
        }
      }
      h[hi] += above;
    } else {
      if (exact) {
        for (std::size_t i = 0; i < n; ++i) err[i] = errf[i];
      }
      std::uint8_t bins[kBlock];
      ErrBins(err, n, bins);
      h[kDecades] = 0;
      CountBins(bins, n, lo, hi, h);
    }
  }
  for (std::size_t k = 0; k < kDecades; ++k) acc.hist[k] += h[k];
  acc.hist_zero += h[kDecades];
}

class Kernel {
 public:
  Kernel(const StatsConfig& cfg) : cfg_(cfg) {}

  // Accumulates finite pairs a[i], b[i] whose flat positions are base + i (or idx[i]).
  void Finite(const double* a, const double* b, std::size_t n, std::uint64_t base,
              const std::uint64_t* idx, Acc& acc) const {
    if (n == 0) return;
    BlockOut o;
    if (cfg_.rule == Rule::kEither) {
      FiniteBlock<true>(a, b, n, cfg_.atol, cfg_.rtol, o);
    } else {
      FiniteBlock<false>(a, b, n, cfg_.atol, cfg_.rtol, o);
    }
    if (o.maxe > acc.max_e) {
      for (std::size_t i = 0; i < n; ++i) {
        if (std::fabs(a[i] - b[i]) == o.maxe) {
          acc.max_e = o.maxe;
          acc.max_i = idx ? idx[i] : base + i;
          break;
        }
      }
    }
    MergeBlock(o, acc);
    acc.saa += o.saa;
    acc.sbb += o.sbb;
    acc.sab += o.sab;
    double nd = static_cast<double>(n);
    acc.MergeMoments(n, o.sa / nd, o.sb / nd, o.m2a, o.m2b, o.cab);
    // Decade histogram: the bin comes from the exponent bits and one comparison. Four
    // interleaved copies keep consecutive increments of the same bin from waiting on each other.
    std::uint8_t bins[kBlock];
    DecadeBins(a, b, n, Pow10().data(), bins);
    std::uint32_t h[4][kDecades + 1] = {};
    for (std::size_t i = 0; i < n; ++i) ++h[i & 3][bins[i]];
    for (std::size_t k = 0; k < kDecades; ++k) acc.hist[k] += h[0][k] + h[1][k] + h[2][k] + h[3][k];
    acc.hist_zero += h[0][kDecades] + h[1][kDecades] + h[2][kDecades] + h[3][kDecades];
    if (cfg_.ulp_dtype) acc.max_ulp = std::max(acc.max_ulp, MaxUlpIn(*cfg_.ulp_dtype, a, b, n));
    if (!acc.pct.empty()) {
      for (std::size_t i = 0; i < n; ++i) {
        double e = std::fabs(a[i] - b[i]), ab = std::fabs(b[i]);
        double rel = ab > 0 ? e / ab : (e > 0 ? INFINITY : 0.0);
        ++acc.pct[PctKey(e)];
        ++acc.pct[kPctBuckets + PctKey(rel)];
        ++acc.pct[2 * kPctBuckets + PctKey(e - cfg_.rtol * ab)];
      }
    }
  }

  // A block of a pair of one dtype held natively in float32 lanes (`fa`, `fb`: the tensor bytes,
  // read through Src, values exact in float32): a pass in float32 lanes (bfloat16: one in
  // 16-bit lanes, one in float32 lanes), one in float64 lanes, the decade counts over the
  // errors, and rarely a fallback pass. A block with a non-finite value goes through Block()
  // in float64 instead.
  template <DType U, class Src>
  void Native(const unsigned char* fa, const unsigned char* fb, std::size_t n, std::uint64_t base,
              Acc& acc) const {
    NativeOut o;
    float rcp[kBlock], errf[kBlock], wa[U == DType::kBF16 ? kBlock : 1],
        wb[U == DType::kBF16 ? kBlock : 1];
    if constexpr (U == DType::kBF16) {
      NativeBits16<Src>(fa, fb, n, o);
      if (!o.bad) NativeBits<U, Src, true>(fa, fb, n, rcp, errf, wa, wb, o);
    } else {
      NativeBits<U, Src>(fa, fb, n, rcp, errf, wa, wb, o);
    }
    if (o.bad) {
      // Zeroed: GCC cannot tell that the loop fills what Block() reads (-Wmaybe-uninitialized).
      double da[kBlock] = {}, db[kBlock] = {};
      for (std::size_t i = 0; i < n; ++i) {
        da[i] = Src::At(fa, i);
        db[i] = Src::At(fb, i);
      }
      Block(da, db, n, base, acc);
      return;
    }
    // bfloat16 goes on from its float32 copies.
    using S = std::conditional_t<U == DType::kBF16, F32Src, Src>;
    const unsigned char* pa = fa;
    const unsigned char* pb = fb;
    if constexpr (U == DType::kBF16) {
      pa = reinterpret_cast<const unsigned char*>(wa);
      pb = reinterpret_cast<const unsigned char*>(wb);
    }
    // The moments are summed about a shift: the running mean of this thread's range (close to
    // the block mean for all but drifting data), or the block's first pair at the start.
    const double ka = acc.n > 0 ? acc.mean_a : static_cast<double>(S::At(pa, 0));
    const double kb = acc.n > 0 ? acc.mean_b : static_cast<double>(S::At(pb, 0));
    // The reciprocal is fine for the sum of relative errors; the maximum is redone exactly where
    // it matters, below. Either's tolerance test compares each relative error with rtol, so it
    // divides; so does a block with a |b| out of the reciprocal's range.
    float maxab = std::max(-o.minb, o.maxb);
    const bool recip =
        cfg_.rule == Rule::kAllclose && !(o.minab_m1 < 0x007fffffu) && maxab < 0x1p126f;
    if (!recip) {
      NativeErr<false, S>(pa, pb, n, rcp, cfg_.rtol, ka, kb, errf, o);
    } else {
      NativeErr<true, S>(pa, pb, n, rcp, cfg_.rtol, ka, kb, errf, o);
      if (o.maxrel >= acc.max_rel * (1 - 0x1p-40)) o.maxrel = NativeMaxRel<S>(pa, pb, n);
    }
    // The float32 errors are exact for most pairs (for instance whenever b/2 <= a <= 2b), and
    // then stand for the float64 ones; a block with an inexact one gets its float64 errors.
    const bool exact = o.inexact == 0;
    double err[kBlock];
    float maxef;
    std::memcpy(&maxef, &o.maxe_f, 4);
    o.maxe = exact ? static_cast<double>(maxef) : NativeAbsErr<S>(pa, pb, n, err);
    o.out = 0;
    if (cfg_.rule == Rule::kEither ? o.maxe > cfg_.atol : o.maxex > cfg_.atol) {
      o.out = cfg_.rule == Rule::kEither ? NativeOutside<true, S>(pa, pb, n, cfg_.atol, cfg_.rtol)
                                         : NativeOutside<false, S>(pa, pb, n, cfg_.atol, cfg_.rtol);
    }
    if (o.maxe > acc.max_e) {
      for (std::size_t i = 0; i < n; ++i) {
        if (exact ? errf[i] == maxef : err[i] == o.maxe) {
          acc.max_e = o.maxe;
          acc.max_i = base + i;
          break;
        }
      }
    }
    MergeBlock(o, acc);
    acc.max_ulp = std::max<std::uint64_t>(acc.max_ulp, o.ulp);
    // Centred moments from the shifted sums: M2 = Σ(x-k)² - n·δ² with δ = mean - k. Its rounding
    // error is a few ulp of Σ(x-k)², so while n·δ² is at most half of that (M2 at least the
    // other half) it stays a few ulp of M2; otherwise the block takes a second, centred pass.
    const double nd = static_cast<double>(n);
    const double da = o.s1a / nd, db = o.s1b / nd, ma = ka + da, mb = kb + db;
    double m2a = o.s2a - nd * da * da, m2b = o.s2b - nd * db * db, cab = o.sab - nd * da * db;
    if (!(nd * da * da <= 0.5 * o.s2a) || !(nd * db * db <= 0.5 * o.s2b)) {
      NativeMoments<S>(pa, pb, n, ma, mb, m2a, m2b, cab);
    }
    // The raw sums of the cosine from the centred ones: every term is a sum of squares except
    // cab + n·ma·mb, whose rounding error is at most a few ulp of sqrt(saa·sbb), the size of
    // the rounding error of the plain dot product itself.
    acc.saa += m2a + nd * ma * ma;
    acc.sbb += m2b + nd * mb * mb;
    acc.sab += cab + nd * ma * mb;
    acc.MergeMoments(n, ma, mb, m2a, m2b, cab);
    NativeDecades(o, n, exact, errf, err, acc);
  }

  // Any block: pairs with a non-finite side are counted here, the rest go to Finite().
  void Block(const double* a, const double* b, std::size_t n, std::uint64_t base, Acc& acc) const {
    if (AllFinite(a, b, n)) {
      Finite(a, b, n, base, nullptr, acc);
      return;
    }
    double fa[kBlock], fb[kBlock];
    std::uint64_t idx[kBlock];
    std::size_t k = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double x = a[i], y = b[i];
      if (std::isfinite(x) && std::isfinite(y)) {
        fa[k] = x;
        fb[k] = y;
        idx[k++] = base + i;
        continue;
      }
      bool nx = std::isnan(x), ny = std::isnan(y);
      acc.nan_a += nx;
      acc.nan_b += ny;
      acc.pinf_a += x == INFINITY;
      acc.ninf_a += x == -INFINITY;
      acc.pinf_b += y == INFINITY;
      acc.ninf_b += y == -INFINITY;
      acc.nan_mismatch += nx != ny;
      acc.equal += x == y;
      bool pass = (nx && ny && cfg_.equal_nan) || (std::isinf(x) && x == y && cfg_.inf_equal);
      acc.outside += !pass;
      acc.nf_outside += !pass;
    }
    Finite(fa, fb, k, 0, idx, acc);
  }

  bool percentiles() const { return cfg_.percentiles; }
  std::optional<DType> ulp_dtype() const { return cfg_.ulp_dtype; }

 private:
  const StatsConfig& cfg_;
};

// Reads tensor elements in iteration order into double blocks.
class Reader : public ElementReader {
 public:
  // Elements [start, start + n) of the iteration into out.
  Status Load(std::uint64_t start, std::size_t n, double* out) {
    auto raw = Raw(start, n);
    if (!raw) return raw.take_error();
    Convert(tensor().dtype, tensor().big_endian, *raw, n, out);
    return OkStatus();
  }
};

// Aligned to 64 bytes, so that where its loops fall against 32-byte boundaries does not depend on
// the size of the code linked before it: moved by 16 bytes, float16's widening loop crossed one
// and float16 compares took 7 % longer.
__attribute__((aligned(64))) Status RunRange(const TensorInfo& a, const TensorInfo& b, bool linear,
                                             std::uint64_t begin, std::uint64_t end,
                                             const Kernel& kernel, Acc& acc, const std::string& fa,
                                             const std::string& fb) {
  Reader ra, rb;
  if (auto s = ra.Init(a, linear || IsC(a), fa); !s) return s;
  if (auto s = rb.Init(b, linear || IsC(b), fb); !s) return s;
  const DType t = a.dtype;
  const bool native = t == b.dtype && !a.big_endian && !b.big_endian && !kernel.percentiles() &&
                      kernel.ulp_dtype() == t &&
                      (t == DType::kF32 || t == DType::kBF16 || t == DType::kF16);
  if (native) {
    // float32 and bfloat16 are read in place; float16 widens to float32 through the exact table.
    std::vector<float> fbuf(t == DType::kF16 ? 2 * kBlock : 0);
    auto widen_half = [&](const unsigned char* raw, std::size_t n, float* out) {
      const float* tab = T().half.data();
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t v;
        std::memcpy(&v, raw + 2 * i, 2);
        out[i] = tab[v];
      }
      return reinterpret_cast<const unsigned char*>(out);
    };
    for (std::uint64_t i = begin; i < end; i += kBlock) {
      std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, end - i));
      auto xa = ra.Raw(i, n);
      if (!xa) return xa.take_error();
      auto xb = rb.Raw(i, n);
      if (!xb) return xb.take_error();
      switch (t) {
        case DType::kF32:
          kernel.Native<DType::kF32, F32Src>(*xa, *xb, n, i, acc);
          break;
        case DType::kBF16:
          kernel.Native<DType::kBF16, BF16Src>(*xa, *xb, n, i, acc);
          break;
        default:
          kernel.Native<DType::kF16, F32Src>(widen_half(*xa, n, fbuf.data()),
                                             widen_half(*xb, n, fbuf.data() + kBlock), n, i, acc);
          break;
      }
    }
    return OkStatus();
  }
  std::vector<double> buf(2 * kBlock);
  for (std::uint64_t i = begin; i < end; i += kBlock) {
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, end - i));
    if (auto s = ra.Load(i, n, buf.data()); !s) return s;
    if (auto s = rb.Load(i, n, buf.data() + kBlock); !s) return s;
    kernel.Block(buf.data(), buf.data() + kBlock, n, i, acc);
  }
  return OkStatus();
}

}  // namespace

Result<TensorStats> ComputeStats(const TensorInfo& a, const TensorInfo& b, const StatsConfig& cfg,
                                 const std::string& file_a, const std::string& file_b) {
  if (IsComplex(a.dtype) || IsComplex(b.dtype)) {
    return ComputeComplexStats(a, b, cfg, file_a, file_b);  // complex_stats.cc
  }
  Kernel kernel(cfg);
  return PairStats<Acc>(
      a, b, cfg, file_a, file_b,
      [&](bool linear, std::uint64_t begin, std::uint64_t end, Acc& acc) {
        return RunRange(a, b, linear, begin, end, kernel, acc, file_a, file_b);
      },
      [](const Acc& acc, double n, TensorStats& s) {
        double pd = std::sqrt(acc.m2a) * std::sqrt(acc.m2b);
        if (pd > 0) s.pearson = acc.cab / pd;
        s.a = {acc.min_a, acc.max_a, acc.mean_a, std::sqrt(acc.m2a / n)};
        s.b = {acc.min_b, acc.max_b, acc.mean_b, std::sqrt(acc.m2b / n)};
      });
}

}  // namespace dt::compare
