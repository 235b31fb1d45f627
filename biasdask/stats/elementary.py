"""exp and log computed by the package itself, so that their last bit does not depend on the CPU.

The C library's ``exp`` and ``log`` (which Python's ``math``, numba and scipy call) are not correctly
rounded, and glibc picks among variants of them by CPU: on a CPU without FMA and AVX2 they return
another last bit for about one argument in 10⁴ (measured on a million random arguments; glibc 2.36).
numpy's ``np.exp``/``np.log`` pick their own SIMD kernels by CPU as well. Where such a last bit can
steer a computation (an iterative fit, a comparison), biasdask uses these instead: the classic
argument reductions with the minimax polynomials of Sun's fdlibm (error below 1 ulp), written with
plain multiplies and adds and compiled by numba without fast-math flags, so every target computes
the same sequence of roundings.

- exp: x = k ln 2 + r with |r| ≤ ln 2 / 2 (ln 2 split in a high part exact in k·ln2_hi and a low
  part), exp(r) from the rational approximation R(r²), scaled by 2^k.
- log: x = 2^k (1 + f) with √2/2 ≤ 1 + f < √2, log(1 + f) = f - f²/2 + s(f²/2 + R(s²)),
  s = f / (2 + f), plus k ln 2 in two parts.
- power: x**y = exp(y log x) for x > 0 (a few ulp of error where |y log x| is large).
- exp10, log10 (one number at a time, for bin edges and frequency tables): in decimal arithmetic
  (Python's ``decimal``, 40 digits), rounded once to float64: exact on exact powers of ten.
"""

from __future__ import annotations

import math
from decimal import Context, Decimal

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

__all__ = ["exp", "exp10", "exp_scalar", "log", "log10", "log_scalar", "power"]

_LN2_HI = 6.93147180369123816490e-01  # ln 2 rounded to 32 bits: k · _LN2_HI is exact for |k| < 2^20
_LN2_LO = 1.90821492927058770002e-10  # ln 2 - _LN2_HI
_INV_LN2 = 1.44269504088896338700e00
_EXP_P = (
    1.66666666666666019037e-01,
    -2.77777777770155933842e-03,
    6.61375632143793436117e-05,
    -1.65339022054652515390e-06,
    4.13813679705723846039e-08,
)
_LOG_LG = (
    6.666666666666735130e-01,
    3.999999999940941908e-01,
    2.857142874366239149e-01,
    2.222219843214978396e-01,
    1.818357216161805012e-01,
    1.531383769920937332e-01,
    1.479819860511658591e-01,
)
_EXP_OVERFLOW = 7.09782712893383973096e02  # above: exp(x) > the largest double
_EXP_UNDERFLOW = -7.45133219101941108420e02  # below: exp(x) < half the smallest subnormal
_SQRT_HALF = 0.70710678118654752440


@njit(cache=True, nogil=True)
def exp_scalar(x: float) -> float:  # pragma: no cover (compiled)
    """e**x for one float64 (below 1 ulp of error; inf above ~709.78, 0 below ~-745.13)."""
    if x != x:
        return x
    if x > _EXP_OVERFLOW:
        return math.inf
    if x < _EXP_UNDERFLOW:
        return 0.0
    if abs(x) < 2.0**-28:
        return 1.0 + x
    k = float(math.floor(x * _INV_LN2 + 0.5))
    hi = x - k * _LN2_HI
    lo = k * _LN2_LO
    r = hi - lo
    t = r * r
    c = r - t * (_EXP_P[0] + t * (_EXP_P[1] + t * (_EXP_P[2] + t * (_EXP_P[3] + t * _EXP_P[4]))))
    y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
    n = int(k)
    if n > 1023:  # 2^n itself overflows: scale in two exact steps
        return y * 2.0 * math.ldexp(1.0, n - 1)
    if n < -1021:  # a subnormal result: y · 2^(n + 60) is exact, then one rounding
        return (y * math.ldexp(1.0, n + 60)) * 2.0**-60
    return y * math.ldexp(1.0, n)


@njit(cache=True, nogil=True)
def log_scalar(x: float) -> float:  # pragma: no cover (compiled)
    """Natural log of one float64 (below 1 ulp of error; -inf at 0, NaN below 0)."""
    if x != x or x == math.inf:
        return x
    if x < 0.0:
        return math.nan
    if x == 0.0:
        return -math.inf
    m, e = math.frexp(x)  # x = m · 2^e, 0.5 <= m < 1, exact
    if m < _SQRT_HALF:
        m *= 2.0
        e -= 1
    f = m - 1.0
    k = float(e)
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * (_LOG_LG[1] + w * (_LOG_LG[3] + w * _LOG_LG[5]))
    t2 = z * (_LOG_LG[0] + w * (_LOG_LG[2] + w * (_LOG_LG[4] + w * _LOG_LG[6])))
    r = t2 + t1
    half_f2 = 0.5 * f * f
    return k * _LN2_HI - ((half_f2 - (s * (half_f2 + r) + k * _LN2_LO)) - f)


@njit(cache=True, nogil=True)
def _exp_array(x, out):  # pragma: no cover (compiled)
    for i in range(x.size):
        out[i] = exp_scalar(x[i])


@njit(cache=True, nogil=True)
def _log_array(x, out):  # pragma: no cover (compiled)
    for i in range(x.size):
        out[i] = log_scalar(x[i])


def _apply(kernel, x: ArrayLike) -> NDArray[np.float64] | float:
    arr = np.asarray(x, dtype=np.float64)
    flat = np.ascontiguousarray(arr).ravel()
    out = np.empty_like(flat)
    kernel(flat, out)
    return float(out[0]) if arr.ndim == 0 else out.reshape(arr.shape)


def exp(x: ArrayLike) -> NDArray[np.float64] | float:
    """e**x elementwise, the same bits on every CPU (a float for a scalar).

    Examples
    --------
    >>> exp(0.0), round(exp(1.0), 12), exp([-745.2, 710.0]).tolist()
    (1.0, 2.718281828459, [0.0, inf])
    """
    return _apply(_exp_array, x)


def log(x: ArrayLike) -> NDArray[np.float64] | float:
    """The natural log elementwise, the same bits on every CPU (a float for a scalar).

    Examples
    --------
    >>> log(1.0), log([np.e, 0.0]).tolist()
    (0.0, [1.0, -inf])
    """
    return _apply(_log_array, x)


@njit(cache=True, nogil=True)
def _power_array(x, y, out):  # pragma: no cover (compiled)
    for i in range(x.size):
        if y == 1.0 or x[i] != x[i]:
            out[i] = x[i]
        elif x[i] == 0.0:
            out[i] = 0.0 if y > 0.0 else (1.0 if y == 0.0 else math.inf)
        elif x[i] < 0.0:
            out[i] = math.nan
        else:
            out[i] = exp_scalar(y * log_scalar(x[i]))


def power(x: ArrayLike, y: float) -> NDArray[np.float64] | float:
    """x**y elementwise for x >= 0 (NaN below 0), the same bits on every CPU (a float for a scalar).

    Examples
    --------
    >>> power([4.0, 0.0, 2.0], 0.5).tolist()
    [2.0, 0.0, 1.414213562373095]
    """
    return _apply(lambda flat, out: _power_array(flat, float(y), out), x)


_DECIMAL = Context(prec=40)


def exp10(x: float) -> float:
    """10**x, correctly rounded (decimal arithmetic; exact where 10**x is a float64).

    Examples
    --------
    >>> exp10(3.0), exp10(-2.0), exp10(0.5)
    (1000.0, 0.01, 3.1622776601683795)
    """
    return float(_DECIMAL.power(Decimal(10), Decimal(float(x))))


def log10(x: float) -> float:
    """log10 of a positive number, correctly rounded (decimal arithmetic; exact on powers of ten).

    Examples
    --------
    >>> log10(1000.0), log10(2.0)
    (3.0, 0.3010299956639812)
    """
    return float(_DECIMAL.log10(Decimal(float(x))))
