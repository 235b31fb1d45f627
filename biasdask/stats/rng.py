"""The random numbers of the permutation kernels, compiled: numpy's ``SeedSequence`` child states and
xoshiro256** with Lemire's bounded draws, bit for bit as numpy computes them.

Leaves shared by the compiled kernels (:mod:`biasdask.stats.permutation`) and their plain-numpy twin
(:mod:`biasdask.stats.permutation_numpy`, which calls them through ``py_func``): both import them from
here, neither from the other.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = [
    "INIT_A",
    "INIT_B",
    "MULT_A",
    "MULT_B",
    "POOL_SIZE",
    "U64",
    "bounded",
    "hashmix",
    "mix",
    "next_u64",
    "rotl",
    "seed_state",
    "use_floyd",
]

U64 = np.uint64
_M32 = np.uint64(0xFFFFFFFF)
# numpy.random.SeedSequence constants (O'Neill's seed_seq_fe, numpy/random/bit_generator.pyx).
INIT_A = np.uint64(0x43B0D7E5)
MULT_A = np.uint64(0x931E8875)
INIT_B = np.uint64(0x8B51F9DD)
MULT_B = np.uint64(0x58F38DED)
_MIX_MULT_L = np.uint64(0xCA01F9DD)
_MIX_MULT_R = np.uint64(0x4973F715)
POOL_SIZE = 4


@njit(cache=True)
def hashmix(value, hash_const):
    value = (value ^ hash_const) & _M32
    hash_const = (hash_const * MULT_A) & _M32
    value = (value * hash_const) & _M32
    value ^= value >> U64(16)
    return value, hash_const


@njit(cache=True)
def mix(x, y):
    result = (_MIX_MULT_L * x - _MIX_MULT_R * y) & _M32
    result ^= result >> U64(16)
    return result


@njit(cache=True)
def _entropy_word(entropy, index, j):
    """Word j of SeedSequence's assembled entropy: run entropy, then the spawn key (index,)."""
    n_run = entropy.shape[0]
    if j < n_run:
        return entropy[j]
    if j == n_run:
        return U64(index) & _M32
    return U64(index) >> U64(32)


@njit(cache=True)
def seed_state(entropy, index, pool, out):
    """out[:4] = SeedSequence(entropy, spawn_key=(index,)).generate_state(4, np.uint64)."""
    n_words = entropy.shape[0] + (1 if index < 2**32 else 2)
    hash_const = INIT_A
    for i in range(POOL_SIZE):
        pool[i], hash_const = hashmix(_entropy_word(entropy, index, i), hash_const)
    for i_src in range(POOL_SIZE):
        for i_dst in range(POOL_SIZE):
            if i_src != i_dst:
                h, hash_const = hashmix(pool[i_src], hash_const)
                pool[i_dst] = mix(pool[i_dst], h)
    for i_src in range(POOL_SIZE, n_words):
        for i_dst in range(POOL_SIZE):
            h, hash_const = hashmix(_entropy_word(entropy, index, i_src), hash_const)
            pool[i_dst] = mix(pool[i_dst], h)
    hash_b = INIT_B
    low = U64(0)
    for i in range(2 * 4):
        d = (pool[i % POOL_SIZE] ^ hash_b) & _M32
        hash_b = (hash_b * MULT_B) & _M32
        d = (d * hash_b) & _M32
        d ^= d >> U64(16)
        if i % 2 == 0:
            low = d
        else:
            out[i // 2] = low | (d << U64(32))


@njit(cache=True)
def rotl(x, k):
    return (x << U64(k)) | (x >> U64(64 - k))


@njit(cache=True)
def next_u64(s):
    """xoshiro256** (Blackman & Vigna 2018): next 64-bit output; advances the state array s."""
    s0, s1, s2, s3 = s[0], s[1], s[2], s[3]
    result = rotl(s1 * U64(5), 7) * U64(9)
    t = s1 << U64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = rotl(s3, 45)
    s[0], s[1], s[2], s[3] = s0, s1, s2, s3
    return result


@njit(cache=True)
def bounded(s, r):
    """Uniform integer in [0, r), 1 ≤ r ≤ 2**32 (Lemire 2019, 32-bit multiply-shift with rejection)."""
    r = U64(r)
    m = (next_u64(s) >> U64(32)) * r
    low = m & _M32
    if low < r:
        threshold = ((_M32 + U64(1)) - r) % r
        while low < threshold:
            m = (next_u64(s) >> U64(32)) * r
            low = m & _M32
    return np.int64(m >> U64(32))


@njit(cache=True)
def use_floyd(n, k):
    """Whether Floyd's algorithm is cheaper than random bits + fix-up for a k-subset of n items."""
    smaller = min(k, n - k)
    bits_cost = (n + 63) // 64 + 2.0 * (abs(0.5 * n - k) + 0.5 * math.sqrt(n))
    return smaller < bits_cost
