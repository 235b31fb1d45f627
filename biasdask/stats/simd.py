"""Merge-masked vector adds for the permutation kernel, written as LLVM IR (numba intrinsics).

The kernel sums, for each lane b of 64 float64 accumulators, the pool values whose bit b of a 64-bit
mask word is set. Written in Python (``a[b] += v[b] if bit else 0.0``), numba's LLVM extracts each bit
in turn (a shift, a mask move, a masked load per 4 lanes). Here eight lanes take their eight bits as
one byte of the word: the byte becomes an ``<8 x i1>`` vector that selects between ``a + v`` and ``a``,
which x86 with AVX-512 runs as one merge-masked ``vaddpd`` and other targets (AVX2, SSE2, ARM) as an
add and a blend. No library offers this (numba exposes no SIMD types; numpy's masked sums allocate and
visit every item per mask).

The sums are bit for bit those of the Python loop: a lane whose bit is clear keeps its value where the
loop added 0.0, and ``a + 0.0 == a`` for every accumulator the kernel holds (it starts at +0.0, and no
sum of finite values in round-to-nearest becomes -0.0 from a +0.0 start).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = ["merge_add_words"]

_LANES = 8


def _is_float64_c(array: types.Type) -> bool:
    return isinstance(array, types.Array) and array.dtype == types.float64 and array.ndim == 1 and array.layout == "C"


@intrinsic
def merge_add_words(typingctx, acc, acc_at, block, block_at, words, shift):
    """``acc[acc_at + l] += block[block_at + 64 i + l]`` for the lanes l < 8 whose bit ``shift + l`` of
    ``words[i]`` is set, for each word i of the tuple ``words`` in turn (the sum order of a loop over
    them); ``acc`` and ``block`` are C-contiguous float64 arrays, the offsets and ``shift`` uint64.
    """
    if not (
        _is_float64_c(acc)
        and _is_float64_c(block)
        and isinstance(words, types.UniTuple)
        and words.dtype == types.uint64
        and 1 <= words.count <= 8
    ):
        return None
    sig = types.void(acc, acc_at, block, block_at, words, shift)
    count = words.count

    def codegen(context, builder, signature, args):
        acc_value, acc_offset, block_value, block_offset, word_values, shift_value = args
        vector = ir.VectorType(ir.DoubleType(), _LANES)
        select = ir.VectorType(ir.IntType(1), _LANES)
        acc_array = context.make_array(signature.args[0])(context, builder, acc_value)
        block_array = context.make_array(signature.args[2])(context, builder, block_value)
        acc_ptr = builder.bitcast(builder.gep(acc_array.data, [acc_offset]), vector.as_pointer())
        total = builder.load(acc_ptr, align=8)
        for i in range(count):
            at = builder.add(block_offset, ir.Constant(ir.IntType(64), 64 * i))
            values = builder.load(builder.bitcast(builder.gep(block_array.data, [at]), vector.as_pointer()), align=8)
            word = builder.extract_value(word_values, i)
            bits = builder.bitcast(builder.trunc(builder.lshr(word, shift_value), ir.IntType(_LANES)), select)
            total = builder.select(bits, builder.fadd(total, values), total)
        builder.store(total, acc_ptr, align=8)
        return context.get_dummy_value()

    return sig, codegen
