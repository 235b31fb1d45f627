"""The permutation kernels of :mod:`biasdask.stats.permutation` in plain numpy, for small pools.

A process pays numba's start-up the first time it dispatches to any compiled kernel, even when the
machine code comes from numba's on-disk cache (numba then imports and registers its typing and
lowering tables). For a WEAT of a few dozen words that start-up is many times the work itself
(docs/benchmarks.md), so until a kernel has been loaded such tests run here instead: the same algorithm vectorised
across permutations, giving **bit-identical** results (tests compare both on random inputs, both
subset-drawing branches, random k and exact enumeration).

Bit-identity holds because every step is integer arithmetic on the same uint64 values (the
SeedSequence hash, xoshiro256**, Lemire's bounded draw, the subset fix-up, each permutation in its own
order), and each masked sum adds the same float64 values in the same order: lane j mod 64, pool
index order, then the fixed pairwise tree of the 64 lanes. The kernel's small leaf functions (hash
mix, rotation, the Floyd-or-bits rule) are reused through their ``py_func``, which never
touches the compiler.
"""

from __future__ import annotations

import itertools

import numpy as np

from biasdask.stats import rng as _k

__all__ = ["MAX_SUMS", "MAX_VALUES", "bits_of", "exact_sums", "masked_sums", "null_sums", "use_numpy"]


_U = np.uint64
_M32 = np.uint64(0xFFFFFFFF)

_hashmix = _k.hashmix.py_func
_mix = _k.mix.py_func
_rotl = _k.rotl.py_func
_use_floyd = _k.use_floyd.py_func

#: Largest pool (nonzero items) and number of sums the numpy path takes: beyond them the compiled
#: kernel's start-up pays for itself (docs/benchmarks.md).
MAX_VALUES = 128
MAX_SUMS = 2**15


def use_numpy(n_values: int, n_sums: int, kernel) -> bool:
    """Whether a job of ``n_sums`` sums over ``n_values`` items should run here rather than in ``kernel``.

    Only small jobs, and only while the compiled ``kernel`` has not been loaded in this process: once
    numba's start-up has been paid (a big test ran, or a worker plugin warmed it), the kernel is faster.
    """
    return n_values <= MAX_VALUES and n_sums <= MAX_SUMS and not kernel.signatures


def bits_of(masks: np.ndarray, n_items: int) -> np.ndarray:
    """Item-major booleans (n_items, count) of packed uint64 mask rows (count, words): item j is bit
    j mod 64 of word j // 64."""
    count, n_words = masks.shape
    stacked = np.ascontiguousarray(masks.T).astype("<u8").view(np.uint8).reshape(n_words, count, 8)
    planes = stacked.transpose(0, 2, 1).reshape(n_words * 8, count)
    return np.unpackbits(planes, axis=0, bitorder="little").view(bool)[:n_items]


def masked_sums(values: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """Σ_j values[j]·bits[j, g] for every column g, summed exactly as ``_masked_sums`` sums them.

    ``bits`` is item-major (n_items ≤ len(values), count): lane j mod 64 accumulates in item order
    from +0.0, then the 64 lanes are summed by the kernel's pairwise tree. Items past ``n_items`` are
    not added, where the kernel adds +0.0 for them: x + 0.0 = x for every x but -0.0, which a sum that
    starts at +0.0 never reaches.
    """
    n_words = values.shape[0] // 64
    pool = values.astype(np.float64).reshape(n_words, 64, 1)
    acc = np.zeros((64, bits.shape[1]))
    for w in range(n_words):
        lanes = bits[w * 64 : (w + 1) * 64]
        acc[: lanes.shape[0]] += np.where(lanes, pool[w, : lanes.shape[0]], 0.0)
    width = 32
    while width >= 1:
        acc[:width] += acc[width : 2 * width]
        width //= 2
    return acc[0].copy()


def _seed_states(entropy: np.ndarray, index: np.ndarray) -> np.ndarray:
    """States (4, m) of ``SeedSequence(entropy, spawn_key=(i,)).generate_state(4, np.uint64)``, i < 2**32."""
    m = index.shape[0]
    words = [np.full(m, w, dtype=np.uint64) for w in entropy] + [index & _M32]
    hash_const = _k.INIT_A
    pool: list[np.ndarray] = [words[0]] * _k.POOL_SIZE  # every entry is set below
    for i in range(_k.POOL_SIZE):
        pool[i], hash_const = _hashmix(words[i], hash_const)
    for i_src in range(_k.POOL_SIZE):
        for i_dst in range(_k.POOL_SIZE):
            if i_src != i_dst:
                h, hash_const = _hashmix(pool[i_src], hash_const)
                pool[i_dst] = _mix(pool[i_dst], h)
    for i_src in range(_k.POOL_SIZE, len(words)):
        for i_dst in range(_k.POOL_SIZE):
            h, hash_const = _hashmix(words[i_src], hash_const)
            pool[i_dst] = _mix(pool[i_dst], h)
    hash_b = _k.INIT_B
    state = np.empty((4, m), dtype=np.uint64)
    low: np.ndarray = np.zeros(m, dtype=np.uint64)
    for i in range(2 * 4):
        d = (pool[i % _k.POOL_SIZE] ^ hash_b) & _M32
        hash_b = (hash_b * _k.MULT_B) & _M32
        d = (d * hash_b) & _M32
        d ^= d >> _U(16)
        if i % 2 == 0:
            low = d
        else:
            state[i // 2] = low | (d << _U(32))
    return state


def _next(state: np.ndarray) -> np.ndarray:
    """xoshiro256** outputs of the generators whose states are the columns of ``state`` (advanced in place)."""
    s0, s1, s2, s3 = state
    result = _rotl(s1 * _U(5), 7) * _U(9)
    t = s1 << _U(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    state[3] = _rotl(s3, 45)
    return result


def _bounded(state: np.ndarray, r: int) -> np.ndarray:
    """Lemire's unbiased integers in [0, r) from the generators ``state`` (r ≤ 2**32)."""
    bound = _U(r)
    m = (_next(state) >> _U(32)) * bound
    threshold = ((_M32 + _U(1)) - bound) % bound
    again = np.flatnonzero((m & _M32) < threshold)  # < threshold implies < r: the kernel's test
    while again.size:
        redraw = state[:, again]
        m[again] = (_next(redraw) >> _U(32)) * bound
        state[:, again] = redraw
        again = again[(m[again] & _M32) < threshold]
    return (m >> _U(32)).astype(np.int64)


def _draw_subsets(state: np.ndarray, n: int, k: int) -> np.ndarray:
    """``_draw_subset`` for the generators ``state`` (same n and k): item-major booleans (n, generators)."""
    count = state.shape[1]
    if _use_floyd(n, k):
        here = np.arange(count)
        bits = np.zeros((n, count), dtype=bool)
        smaller = min(k, n - k)
        for j in range(n - smaller, n):
            r = _bounded(state, j + 1)
            r = np.where(bits[r, here], j, r)
            bits[r, here] = True
        return bits if smaller == k else ~bits
    n_words = (n + 63) // 64
    words = np.empty((count, n_words), dtype=np.uint64)
    for w in range(n_words):
        words[:, w] = _next(state)
    bits = bits_of(words, n)
    have = bits.sum(axis=0)
    # Each generator with too many items set clears random set ones, each with too few sets random
    # unset ones, until exactly k are set: both kinds drawn in the same passes (each on its own stream).
    todo = np.flatnonzero(have != k)
    left = state[:, todo]  # the generators still drawing, compacted as they finish
    surplus = have[todo] > k
    while todo.size:
        r = _bounded(left, n)
        hit = bits[r, todo] == surplus
        bits[r[hit], todo[hit]] = ~surplus[hit]
        have[todo[hit]] += np.where(surplus[hit], -1, 1)
        going = have[todo] != k
        if not going.all():
            todo, left, surplus = todo[going], left[:, going], surplus[going]
    return bits


def null_sums(
    values: np.ndarray, n: int, k_min: int, k_cdf: np.ndarray, entropy: np.ndarray, start: int, stop: int
) -> tuple[np.ndarray, np.ndarray]:
    """``_null_sums``: (Σ_{X_i} values, k_i) for the permutations i in [start, stop), stop ≤ 2**32."""
    state = _seed_states(entropy, np.arange(start, stop, dtype=np.uint64))
    if k_cdf.shape[0] > 1:
        u = (_next(state) >> _U(11)).astype(np.float64) * 2.0**-53
        ks = k_min + np.searchsorted(k_cdf, u, side="right")
        bits = np.zeros((n, stop - start), dtype=bool)
        for k in np.unique(ks):
            group = np.flatnonzero(ks == k)
            bits[:, group] = _draw_subsets(state[:, group], n, int(k))
    else:
        ks = np.full(stop - start, k_min, dtype=np.int64)
        bits = _draw_subsets(state, n, k_min)
    return masked_sums(values, bits), ks.astype(np.int64)


def exact_sums(values: np.ndarray, n: int, ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``_exact_sums``: the sum of every k-subset of the n items, k in ``ks``, lexicographic within k."""
    sums, sub_k = [], []
    for k in ks:
        listed = list(itertools.combinations(range(n), int(k)))
        combos = np.array(listed, dtype=np.intp).reshape(len(listed), int(k))
        bits = np.zeros((n, combos.shape[0]), dtype=bool)
        bits[combos, np.arange(combos.shape[0])[:, None]] = True
        sums.append(masked_sums(values, bits))
        sub_k.append(np.full(combos.shape[0], k, dtype=np.int64))
    return np.concatenate(sums), np.concatenate(sub_k)
