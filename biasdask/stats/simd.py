"""Vector kernels written as LLVM IR (numba intrinsics): the permutation kernel's merge-masked adds, and
the tiles of :mod:`biasdask.stats.linalg`'s products.

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

The product tiles (:func:`gram_tile`, :func:`dot_tile`, :func:`row_dot`, :func:`row_dots`) hold their sums in
vectors of eight lanes for a whole loop, which numba cannot be made to do from Python without letting
LLVM reorder the sums; here each lane adds its own products in a fixed order, with separate (unfused)
multiplies and adds.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["ROW_DOTS", "dot_tile", "gram_tile", "merge_add_block", "row_dot", "row_dots"]

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


def _c_matrix(array: types.Type) -> bool:
    return isinstance(array, types.Array) and array.dtype == types.float64 and array.ndim == 2 and array.layout == "C"


def _row_matrix(array: types.Type) -> bool:
    """A C-contiguous float32 or float64 matrix: the rows :func:`row_dot` reads."""
    return (
        isinstance(array, types.Array)
        and array.ndim == 2
        and array.layout == "C"
        and array.dtype in (types.float32, types.float64)
    )


def _vector_at(builder, data, offset, vector):
    """The ``vector`` of consecutive float64 values at ``data[offset]``."""
    return builder.load(builder.bitcast(builder.gep(data, [offset]), vector.as_pointer()), align=8)


def _combine_lanes(builder, lanes):
    """((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)) of a vector of eight float64 lanes."""
    i32 = ir.IntType(32)
    value = [builder.extract_element(lanes, ir.Constant(i32, lane)) for lane in range(_LANES)]
    pairs = [builder.fadd(value[2 * q], value[2 * q + 1]) for q in range(4)]
    return builder.fadd(builder.fadd(pairs[0], pairs[1]), builder.fadd(pairs[2], pairs[3]))


_GRAM_ROWS = 4


@intrinsic
def gram_tile(typingctx, g, v, a0, b0, i0, i1):
    """``g[a0 + r, b0:b0 + 8] += v[i, a0 + r] * v[i, b0:b0 + 8]`` for r < 4 and each row i in
    ``[i0, i1)`` in turn: a 4 x 8 tile of the Gram matrix ``vᵀv``, each entry adding its products in row
    order (as a plain loop does). ``g`` and ``v`` are C-contiguous float64 matrices (``g`` D x D, ``v``
    n x D); the indices are int64, with a0 + 4 <= D and b0 + 8 <= D.

    The 32 entries are held in four vectors of eight over the rows (one load of ``v[i, b0:b0 + 8]`` and
    four broadcasts per row), and stored once at the end. Products and sums are separate, unfused
    operations in every lane, so any target (SSE2, AVX2, AVX-512) gives the same bits.
    """
    if not (_c_matrix(g) and _c_matrix(v)):
        return None
    sig = types.void(g, v, a0, b0, i0, i1)

    def codegen(context, builder, signature, args):
        g_value, v_value, a0_value, b0_value, i0_value, i1_value = args
        vector = ir.VectorType(ir.DoubleType(), _LANES)
        i32, i64 = ir.IntType(32), ir.IntType(64)
        g_array = context.make_array(signature.args[0])(context, builder, g_value)
        v_array = context.make_array(signature.args[1])(context, builder, v_value)
        dim = builder.extract_value(v_array.shape, 1)
        g_dim = builder.extract_value(g_array.shape, 1)
        pointers, totals = [], []
        for r in range(_GRAM_ROWS):
            at = builder.add(builder.mul(builder.add(a0_value, ir.Constant(i64, r)), g_dim), b0_value)
            pointer = builder.bitcast(builder.gep(g_array.data, [at]), vector.as_pointer())
            total = cgutils.alloca_once(builder, vector)  # promoted to a register by LLVM
            builder.store(builder.load(pointer, align=8), total)
            pointers.append(pointer)
            totals.append(total)
        broadcast = ir.Constant(ir.VectorType(i32, _LANES), [0] * _LANES)
        with cgutils.for_range(builder, builder.sub(i1_value, i0_value)) as loop:
            base = builder.mul(builder.add(i0_value, loop.index), dim)
            row = _vector_at(builder, v_array.data, builder.add(base, b0_value), vector)
            for r in range(_GRAM_ROWS):
                scalar = builder.load(
                    builder.gep(v_array.data, [builder.add(base, builder.add(a0_value, ir.Constant(i64, r)))])
                )
                one = builder.insert_element(ir.Constant(vector, ir.Undefined), scalar, ir.Constant(i32, 0))
                splat = builder.shuffle_vector(one, ir.Constant(vector, ir.Undefined), broadcast)
                builder.store(builder.fadd(builder.load(totals[r]), builder.fmul(splat, row)), totals[r])
        for r in range(_GRAM_ROWS):
            builder.store(builder.load(totals[r]), pointers[r], align=8)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def dot_tile(typingctx, a, b, i0, j0, out):
    """``out[i0 + r, j0 + c] = dot(a[i0 + r], b[j0 + c])`` for r, c in {0, 1}, in the lane order of
    :mod:`biasdask.stats.linalg`: term k in lane k mod 8, each lane adding its terms in order of k from
    0, the lanes combined as ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)). ``a``, ``b`` and ``out``
    are C-contiguous float64 matrices, ``a`` and ``b`` with rows of one length; the indices are int64.

    The four sums of eight lanes are vectors over the rows (four loads of eight values per step); the
    terms past the last multiple of eight enter lanes 0, 1, ... as one vector whose other lanes add
    +0.0 (a lane never holds -0.0: it starts at +0.0, and in round-to-nearest no sum from there gives
    -0.0), and the lanes are combined in registers. Products and sums are unfused in every lane, so any
    target gives the same bits.
    """
    if not (_c_matrix(a) and _c_matrix(b) and _c_matrix(out)):
        return None
    sig = types.void(a, b, i0, j0, out)

    def codegen(context, builder, signature, args):
        a_value, b_value, i0_value, j0_value, out_value = args
        vector = ir.VectorType(ir.DoubleType(), _LANES)
        i32, i64 = ir.IntType(32), ir.IntType(64)
        a_array = context.make_array(signature.args[0])(context, builder, a_value)
        b_array = context.make_array(signature.args[1])(context, builder, b_value)
        out_array = context.make_array(signature.args[4])(context, builder, out_value)
        width = builder.extract_value(a_array.shape, 1)
        out_width = builder.extract_value(out_array.shape, 1)
        eight = ir.Constant(i64, _LANES)
        stop = builder.mul(builder.udiv(width, eight), eight)
        rows = [builder.mul(builder.add(i0_value, ir.Constant(i64, r)), width) for r in range(2)]
        cols = [builder.mul(builder.add(j0_value, ir.Constant(i64, c)), width) for c in range(2)]
        totals = []
        for _ in range(4):
            total = cgutils.alloca_once(builder, vector)  # promoted to a register by LLVM
            builder.store(ir.Constant(vector, [0.0] * _LANES), total)
            totals.append(total)
        with cgutils.for_range(builder, builder.udiv(width, eight)) as loop:
            k = builder.mul(loop.index, eight)
            xs = [_vector_at(builder, a_array.data, builder.add(row, k), vector) for row in rows]
            ys = [_vector_at(builder, b_array.data, builder.add(col, k), vector) for col in cols]
            for r in range(2):
                for c in range(2):
                    total = totals[2 * r + c]
                    builder.store(builder.fadd(builder.load(total), builder.fmul(xs[r], ys[c])), total)
        # the last terms: index min(stop + l, width - 1) is always inside the row; lanes past them add +0.0
        last = builder.sub(width, ir.Constant(i64, 1))
        zero = ir.Constant(ir.DoubleType(), 0.0)
        for r in range(2):
            for c in range(2):
                tail = ir.Constant(vector, ir.Undefined)
                for lane in range(_LANES):
                    at = builder.add(stop, ir.Constant(i64, lane))
                    inside = builder.icmp_signed("<", at, width)
                    at = builder.select(inside, at, last)
                    x = builder.load(builder.gep(a_array.data, [builder.add(rows[r], at)]))
                    y = builder.load(builder.gep(b_array.data, [builder.add(cols[c], at)]))
                    term = builder.select(inside, builder.fmul(x, y), zero)
                    tail = builder.insert_element(tail, term, ir.Constant(i32, lane))
                lanes = builder.fadd(builder.load(totals[2 * r + c]), tail)
                total = _combine_lanes(builder, lanes)
                at = builder.add(builder.mul(builder.add(i0_value, ir.Constant(i64, r)), out_width), j0_value)
                builder.store(total, builder.gep(out_array.data, [builder.add(at, ir.Constant(i64, c))]))
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def row_dot(typingctx, a, i, x):
    """``dot(a[i], x)`` in the lane order of :mod:`biasdask.stats.linalg` (the bits of ``lane_dot``), for
    row ``i`` (int64) of a C-contiguous float32 or float64 matrix ``a``, read as float64, and a
    C-contiguous float64 vector ``x`` of the row's length.

    The eight lanes are one vector for the whole row (each step loads eight values of the row, widened
    to float64, and eight of ``x``); the tail and the lanes' combination are those of :func:`dot_tile`.
    One row at a time, not a tile of rows: a pass over a vocabulary then reads memory as one stream,
    which the hardware prefetchers follow (four rows at once ran at half the memory bandwidth).
    """
    if not (_row_matrix(a) and _c_array(x, types.float64)):
        return None
    sig = types.float64(a, i, x)

    def codegen(context, builder, signature, args):
        a_value, i_value, x_value = args
        x_array = context.make_array(signature.args[2])(context, builder, x_value)
        (total,) = _row_products(context, builder, signature.args[0], a_value, i_value, x_array.data, [None])
        return total

    return sig, codegen


#: directions :func:`row_dots` takes a row's dot products with at once
ROW_DOTS = 4


@intrinsic
def row_dots(typingctx, a, i, xs, p0, out):
    """``out[p0 + q] = row_dot(a, i, xs[p0 + q])`` for q < :data:`ROW_DOTS`: row ``i`` (int64) of a
    C-contiguous float32 or float64 matrix ``a``, read as float64, against rows ``p0`` to ``p0 + 3`` (int64,
    p0 + 4 <= rows of ``xs``) of a C-contiguous float64 matrix ``xs`` of the row's length; ``out`` a
    C-contiguous float64 vector.

    Each product is summed as :func:`row_dot` sums it (the same bits); the four sums are four vectors
    over one loop along the row, so each load of eight values of the row serves the four of them and their
    chains of adds overlap, where four calls of :func:`row_dot` would wait on one chain at a time.
    """
    if not (_row_matrix(a) and _c_matrix(xs) and _c_array(out, types.float64)):
        return None
    sig = types.void(a, i, xs, p0, out)

    def codegen(context, builder, signature, args):
        a_value, i_value, xs_value, p0_value, out_value = args
        i64 = ir.IntType(64)
        xs_array = context.make_array(signature.args[2])(context, builder, xs_value)
        out_array = context.make_array(signature.args[4])(context, builder, out_value)
        width = builder.extract_value(xs_array.shape, 1)
        starts = [builder.mul(builder.add(p0_value, ir.Constant(i64, q)), width) for q in range(ROW_DOTS)]
        totals = _row_products(context, builder, signature.args[0], a_value, i_value, xs_array.data, starts)
        for q, total in enumerate(totals):
            builder.store(total, builder.gep(out_array.data, [builder.add(p0_value, ir.Constant(i64, q))]))
        return context.get_dummy_value()

    return sig, codegen


def _row_products(context, builder, a_type, a_value, i_value, x_data, starts):
    """The dot products of row ``i_value`` of the matrix ``a_value`` (of type ``a_type``) with the float64
    vectors at ``x_data + start`` for each of ``starts`` (None: ``x_data`` itself), each summed in the
    lane order of :mod:`biasdask.stats.linalg` (the tail and the lanes' combination of :func:`dot_tile`):
    one loop along the row, each load of eight of its values serving every product."""
    vector = ir.VectorType(ir.DoubleType(), _LANES)
    stored = ir.VectorType(context.get_data_type(a_type.dtype), _LANES)
    wide = a_type.dtype == types.float32
    i32, i64 = ir.IntType(32), ir.IntType(64)
    a_array = context.make_array(a_type)(context, builder, a_value)
    width = builder.extract_value(a_array.shape, 1)
    row = builder.mul(i_value, width)
    eight = ir.Constant(i64, _LANES)
    stop = builder.mul(builder.udiv(width, eight), eight)

    def at_start(start, k):
        return k if start is None else builder.add(start, k)

    totals = []
    for _ in starts:
        total = cgutils.alloca_once(builder, vector)  # promoted to a register by LLVM
        builder.store(ir.Constant(vector, [0.0] * _LANES), total)
        totals.append(total)
    with cgutils.for_range(builder, builder.udiv(width, eight)) as loop:
        k = builder.mul(loop.index, eight)
        values = builder.load(
            builder.bitcast(builder.gep(a_array.data, [builder.add(row, k)]), stored.as_pointer()),
            align=4 if wide else 8,
        )
        if wide:
            values = builder.fpext(values, vector)
        for start, total in zip(starts, totals):
            ys = _vector_at(builder, x_data, at_start(start, k), vector)
            builder.store(builder.fadd(builder.load(total), builder.fmul(values, ys)), total)
    last = builder.sub(width, ir.Constant(i64, 1))
    zero = ir.Constant(ir.DoubleType(), 0.0)
    tails = [ir.Constant(vector, ir.Undefined) for _ in starts]
    for lane in range(_LANES):
        at = builder.add(stop, ir.Constant(i64, lane))
        inside = builder.icmp_signed("<", at, width)
        at = builder.select(inside, at, last)
        value = builder.load(builder.gep(a_array.data, [builder.add(row, at)]))
        if wide:
            value = builder.fpext(value, ir.DoubleType())
        for q, start in enumerate(starts):
            y = builder.load(builder.gep(x_data, [at_start(start, at)]))
            term = builder.select(inside, builder.fmul(value, y), zero)
            tails[q] = builder.insert_element(tails[q], term, ir.Constant(i32, lane))
    return [_combine_lanes(builder, builder.fadd(builder.load(total), tail)) for total, tail in zip(totals, tails)]
