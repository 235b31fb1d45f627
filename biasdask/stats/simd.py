"""Merge-masked vector adds for the permutation kernel, written as LLVM IR (numba intrinsics).

The kernel sums, for each lane b of 64 float64 accumulators, the pool values whose bit b of a 64-bit
mask word is set. Written in Python (``a[b] += v[b] if bit else 0.0``), numba's LLVM extracts each bit
in turn (a shift, a mask move, a masked load per 4 lanes) and keeps the accumulators in memory. Here
eight lanes take their eight bits as one byte of the word: the byte becomes an ``<8 x i1>`` vector that
selects between ``a + v`` and ``a``, which x86 with AVX-512 runs as one merge-masked ``vaddpd`` and other
targets (AVX2, SSE2, ARM) as an add and a blend; the 64 lanes stay in registers over a block of words. No library offers this (numba exposes no SIMD types; numpy's masked sums allocate and
visit every item per mask).

The sums are bit for bit those of the Python loop: a lane whose bit is clear keeps its value where the
loop added 0.0, and ``a + 0.0 == a`` for every accumulator the kernel holds (it starts at +0.0, and no
sum of finite values in round-to-nearest becomes -0.0 from a +0.0 start).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["merge_add_block"]

_LANES = 8
_GROUPS = 64 // _LANES


def _c_array(array: types.Type, dtype: types.Type) -> bool:
    return isinstance(array, types.Array) and array.dtype == dtype and array.ndim == 1 and array.layout == "C"


@intrinsic
def merge_add_block(typingctx, acc, block, words, first, stop):
    """``acc[l] += block[64 (i - first) + l]`` for each lane l < 64 whose bit l of ``words[i]`` is set,
    for the words i in ``[first, stop)`` in turn (the sum order of a loop over them): ``acc`` holds 64
    float64 lanes, ``block`` the float64 values of those words' items, ``words`` the uint64 mask words;
    ``first`` and ``stop`` are uint64.

    The lanes are held as eight vectors of eight, in registers for the whole range (eight independent
    chains of adds, so their latency overlaps), and stored once at the end.
    """
    if not (_c_array(acc, types.float64) and _c_array(block, types.float64) and _c_array(words, types.uint64)):
        return None
    sig = types.void(acc, block, words, first, stop)

    def codegen(context, builder, signature, args):
        acc_value, block_value, words_value, first_value, stop_value = args
        vector = ir.VectorType(ir.DoubleType(), _LANES)
        select = ir.VectorType(ir.IntType(1), _LANES)
        i64 = ir.IntType(64)
        acc_array = context.make_array(signature.args[0])(context, builder, acc_value)
        block_array = context.make_array(signature.args[1])(context, builder, block_value)
        words_array = context.make_array(signature.args[2])(context, builder, words_value)
        pointers, totals = [], []
        for q in range(_GROUPS):
            pointer = builder.bitcast(builder.gep(acc_array.data, [ir.Constant(i64, _LANES * q)]), vector.as_pointer())
            total = cgutils.alloca_once(builder, vector)  # promoted to a register by LLVM
            builder.store(builder.load(pointer, align=8), total)
            pointers.append(pointer)
            totals.append(total)
        with cgutils.for_range(builder, builder.sub(stop_value, first_value)) as loop:
            word = builder.load(builder.gep(words_array.data, [builder.add(first_value, loop.index)]))
            base = builder.mul(loop.index, ir.Constant(i64, 64))
            for q in range(_GROUPS):
                at = builder.add(base, ir.Constant(i64, _LANES * q))
                values = builder.load(
                    builder.bitcast(builder.gep(block_array.data, [at]), vector.as_pointer()), align=8
                )
                shifted = builder.lshr(word, ir.Constant(i64, _LANES * q))
                bits = builder.bitcast(builder.trunc(shifted, ir.IntType(_LANES)), select)
                total = builder.load(totals[q])
                builder.store(builder.select(bits, builder.fadd(total, values), total), totals[q])
        for q in range(_GROUPS):
            builder.store(builder.load(totals[q]), pointers[q], align=8)
        return context.get_dummy_value()

    return sig, codegen
