"""The vector kernels written as LLVM IR: the sums of a plain loop, bit for bit, on any target."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from numba import njit

from biasdask.stats.simd import ROW_DOTS, merge_add_block, row_dot, row_dots

_U = np.uint64


@njit
def _add_block(acc, block, words, first, stop):
    merge_add_block(acc, block, words, _U(first), _U(stop))


def _loop(acc, block, words, first, stop):
    """The oracle: for each word in turn, each lane adds its value where its bit is set, else 0.0."""
    acc = acc.copy()
    for i in range(first, stop):
        for lane in range(64):
            acc[lane] += block[64 * (i - first) + lane] if (int(words[i]) >> lane) & 1 else 0.0
    return acc


@pytest.mark.parametrize(("first", "stop"), [(0, 1), (2, 5), (0, 64), (3, 3)])
def test_merge_added_lanes_equal_a_plain_loop_bit_for_bit(first, stop):
    rng = np.random.default_rng(stop)
    for trial in range(10):
        block = rng.normal(0.0, 0.05, 64 * max(1, stop - first))
        block[rng.integers(0, block.size, 9)] = -0.0  # a -0.0 added to +0.0 must leave +0.0
        block[rng.integers(0, block.size, 3)] = 0.0
        words = rng.integers(0, 2**63, 64, dtype=np.uint64) * _U(2) + _U(trial % 2)
        acc = np.zeros(64) if trial < 5 else rng.normal(0.0, 1.0, 64)
        expected = _loop(acc, block, words, first, stop)
        got = acc.copy()
        _add_block(got, block, words, first, stop)
        assert got.tobytes() == expected.tobytes()
    assert not np.signbit(_loop(np.zeros(64), np.full(64 * 4, -0.0), words, 0, 4)).any()


def test_other_array_types_are_refused_at_compile_time():
    from numba.core.errors import TypingError

    @njit
    def add(acc, block, words):
        merge_add_block(acc, block, words, _U(0), _U(1))

    with pytest.raises(TypingError):
        add(np.zeros(64, dtype=np.float32), np.zeros(64), np.zeros(1, dtype=np.uint64))


_NULL = """
import sys
import numpy as np
from biasdask.stats.permutation import null_batch, prepare_test
rng = np.random.default_rng(5)
x, y = rng.normal(0.1, 1.0, 3000).astype(np.float32), rng.normal(0.0, 1.0, 2900).astype(np.float32)
sys.stdout.write(null_batch(prepare_test(x, y, 200, seed=11), 0, 200).tobytes().hex())
"""


@pytest.mark.slow
def test_the_null_is_the_same_compiled_for_avx512_avx2_and_a_generic_cpu(tmp_path):
    """The kernel compiled for three targets (numba's NUMBA_CPU_NAME; each with a cache of its own)
    gives the same null statistics, bit for bit."""
    nulls = {}
    for cpu in ("host", "haswell", "generic"):
        env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / cpu)}
        if cpu != "host":
            env["NUMBA_CPU_NAME"] = cpu
        done = subprocess.run([sys.executable, "-c", _NULL], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        nulls[cpu] = done.stdout
    assert nulls["host"] and nulls["host"] == nulls["haswell"] == nulls["generic"]


@njit
def _row_dots(a, x):
    out = np.empty(a.shape[0])
    for i in range(a.shape[0]):
        out[i] = row_dot(a, i, x)
    return out


def _lane_order(row, x):
    """The oracle: term k into lane k mod 8, each lane adding in order of k, lanes combined pairwise."""
    lanes = [0.0] * 8
    for k, (v, w) in enumerate(zip(row.astype(np.float64).tolist(), x.tolist())):
        lanes[k % 8] += v * w
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [1, 7, 8, 9, 16, 299, 300, 301])
def test_a_row_dot_is_the_lane_order_sum_bit_for_bit(dtype, width):
    rng = np.random.default_rng(width)
    a = (rng.standard_normal((12, width)) * rng.choice([1e-30, 1.0, 1e30], size=(12, 1))).astype(dtype)
    a[3] = -0.0  # all terms -0.0: a lane holding +0.0 stays +0.0
    a[4, ::3] = 0.0
    x = rng.standard_normal(width)
    got = _row_dots(np.ascontiguousarray(a), x)
    expected = np.array([_lane_order(row, x) for row in a])
    assert got.tobytes() == expected.tobytes()
    assert not np.signbit(got[3])


def test_a_row_dot_refuses_other_arrays_at_compile_time():
    from numba.core.errors import TypingError

    with pytest.raises(TypingError):
        _row_dots(np.zeros((2, 3), dtype=np.int32), np.zeros(3))


@njit
def _rows_dots(a, xs, p0):
    out = np.full((a.shape[0], xs.shape[0]), np.nan)
    for i in range(a.shape[0]):
        row_dots(a, i, xs, p0, out[i])
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [1, 7, 8, 9, 299, 300, 301])
def test_row_dots_are_each_the_lane_order_sum_bit_for_bit(dtype, width):
    rng = np.random.default_rng(width)
    a = (rng.standard_normal((12, width)) * rng.choice([1e-30, 1.0, 1e30], size=(12, 1))).astype(dtype)
    a[3] = -0.0
    a[4, ::3] = 0.0
    xs = rng.standard_normal((ROW_DOTS + 2, width)) * rng.choice([1e-20, 1.0], size=(ROW_DOTS + 2, 1))
    got = _rows_dots(np.ascontiguousarray(a), xs, 1)
    assert np.isnan(got[:, [0, ROW_DOTS + 1]]).all()  # only rows p0 to p0 + 3 of xs
    expected = np.array([[_lane_order(row, x) for x in xs[1 : ROW_DOTS + 1]] for row in a])
    assert got[:, 1 : ROW_DOTS + 1].tobytes() == expected.tobytes()
    assert not np.signbit(got[3, 1 : ROW_DOTS + 1]).any()


def test_row_dots_refuse_other_arrays_at_compile_time():
    from numba.core.errors import TypingError

    with pytest.raises(TypingError):
        _rows_dots(np.zeros((2, 3)), np.zeros((ROW_DOTS, 3), dtype=np.float32), 0)
