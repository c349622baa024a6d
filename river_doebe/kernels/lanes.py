"""Dot products in four fixed partial sums, the same bits on every machine, and four rows of a
triangular matrix at a time in vector registers. Numba and llvmlite.

The stack kernels sum a dot product ``a' b`` over ``i < n`` in four partial sums: element ``i``
of the first ``4 floor(n / 4)`` goes to sum ``i mod 4``, the remaining ones to sum 0 in order,
and the result is ``(s0 + s1) + (s2 + s3)`` (:func:`dot`). The order is fixed in the source, so
a model gives the same numbers on every machine, whatever its vector width.

Compiled as written, those four sums are four scalar chains: LLVM vectorises a sum only when it
may reorder it (``fastmath``), and then the machine's vector width would decide the order, and
the numbers. :func:`dot_rows4` gives four rows' dot products with the same vector ``b``, each
bit for bit :func:`dot`, with the four partial sums of a row held as the four lanes of one
vector register (written in LLVM's IR through a Numba intrinsic): each lane multiplies and
adds exactly as the scalar code does (IEEE arithmetic lane by lane, no reordering, no fused
multiply-add), and the four rows give four independent vector sums, which keep the
floating-point units busy where one chain would wait for each addition in turn. A static
member's prediction is such a product for every row of its triangular factor
(:func:`river_doebe.kernels.stack.predict_member`).

When the sweep also applies a static member's owed update, :func:`carlson_dot` does one row's
step of Carlson's update and that row's product together, four entries at a time: the row is
read and written once, and its product, whose four partial sums are the lanes of one vector,
comes with it. Each entry of the row and of the running vector ``e`` takes the scalar step's
operations (lane by lane, in the same order, without fused multiply-adds).

A dynamic member's owed update and product go four rows at a time (:func:`dynamic_rows4`):
four entries of ``v = Sigma_pred phi`` stay in a vector register through four rows, which
saves three of every four loads and stores of ``v``; no sum changes its order, since each entry
of ``v`` still adds the rows in turn. Four rows read side by side are four streams where one
row after the other is one, and the hardware's prefetcher falls behind on them once the stack
lives beyond the core's cache: the kernel asks for the next four rows itself as it goes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from river_doebe.kernels.jit import kernel

__all__ = ["carlson_dot", "dot", "dot_rows4", "dynamic_rows4"]


@kernel(inline="always")
def dot(a, b, n):
    """``sum_i a[i] b[i]`` over ``i < n`` in four fixed partial sums (same order every call)."""
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    i = 0
    while i + 3 < n:
        s0 += a[i] * b[i]
        s1 += a[i + 1] * b[i + 1]
        s2 += a[i + 2] * b[i + 2]
        s3 += a[i + 3] * b[i + 3]
        i += 4
    while i < n:
        s0 += a[i] * b[i]
        i += 1
    return (s0 + s1) + (s2 + s3)


def _contiguous(ty: Any, ndim: int) -> bool:
    return (isinstance(ty, types.Array) and ty.ndim == ndim and ty.layout == "C"
            and ty.dtype == types.float64)


#: four float64 lanes: a vector register of the intrinsics below
_LANES = ir.VectorType(ir.DoubleType(), 4)


def _splat(builder: Any, x: Any) -> Any:
    """The vector of :data:`_LANES` whose every lane is the float64 ``x``."""
    vector = ir.Constant(_LANES, ir.Undefined)
    for k in range(_LANES.count):
        vector = builder.insert_element(vector, x, ir.Constant(ir.IntType(32), k))
    return vector


def _vector_at(builder: Any, pointer: Any, i: Any) -> Any:
    """A pointer to entries ``i`` to ``i + 3`` of the float64 entries at ``pointer``, as one
    vector of :data:`_LANES` (loaded and stored with ``align=8``: any entry may start it)."""
    return builder.bitcast(builder.gep(pointer, [i]), _LANES.as_pointer())


def _row_pointers(context: Any, builder: Any, array: Any, start: Any, n: int) -> list:
    """Pointers to the first entry of rows ``start`` to ``start + n - 1`` of the C-contiguous
    2-D ``array`` (Numba's array structure); no bounds are checked."""
    shape = cgutils.unpack_tuple(builder, array.shape, 2)
    strides = cgutils.unpack_tuple(builder, array.strides, 2)
    zero = ir.Constant(start.type, 0)
    return [cgutils.get_item_pointer2(context, builder, array.data, shape, strides, "C",
                                      [builder.add(start, ir.Constant(start.type, r)), zero])
            for r in range(n)]


def _dot_rows4_typed(typingctx, L, j0, b, out):
    """:func:`dot_rows4`: the elements below ``j0`` with the four partial sums of each row in
    the lanes of one vector, the rest as :func:`dot` takes them. ``L`` (2-D), ``b`` and
    ``out`` (1-D) are C-contiguous float64 arrays; the caller keeps every index in bounds. (All
    of it in LLVM's IR: as Numba code the tail and the sums took Numba longer to compile than
    the rest of a member's step, ``benchmarks/results/engine.md``.)"""
    if not (_contiguous(L, 2) and _contiguous(b, 1) and _contiguous(out, 1)
            and isinstance(j0, types.Integer)):
        return None
    sig = types.void(L, j0, b, out)

    def codegen(context, builder, signature, args):
        L_type, j0_type, b_type, out_type = signature.args
        L_arr = context.make_array(L_type)(context, builder, args[0])
        b_data = context.make_array(b_type)(context, builder, args[2]).data
        out_data = context.make_array(out_type)(context, builder, args[3]).data
        start = context.cast(builder, args[1], j0_type, types.intp)
        intp = start.type
        rows = _row_pointers(context, builder, L_arr, start, 4)
        sums = [cgutils.alloca_once_value(builder, ir.Constant(_LANES, [0.0] * 4))
                for _ in range(4)]

        def load(pointer, i):
            return builder.load(_vector_at(builder, pointer, i), align=8)

        def product(r, k):  # L[j0 + r, j0 + k] * b[j0 + k]
            i = builder.add(start, ir.Constant(intp, k))
            return builder.fmul(builder.load(builder.gep(rows[r], [i])),
                                builder.load(builder.gep(b_data, [i])))

        n_steps = builder.ashr(start, ir.Constant(intp, 2))
        with cgutils.for_range(builder, n_steps) as loop:
            i = builder.shl(loop.index, ir.Constant(intp, 2))
            bi = load(b_data, i)
            for r in range(4):
                builder.store(builder.fadd(builder.load(sums[r]),
                                           builder.fmul(load(rows[r], i), bi)), sums[r])
        for r in range(4):
            s = [builder.extract_element(builder.load(sums[r]), ir.Constant(ir.IntType(32), k))
                 for k in range(4)]
            if r == 3:  # a row of j0 + 4 elements: one more step of dot's four sums
                s = [builder.fadd(s[k], product(r, k)) for k in range(4)]
            else:  # the r + 1 elements left, into the first sum in order
                for k in range(r + 1):
                    s[0] = builder.fadd(s[0], product(r, k))
            total = builder.fadd(builder.fadd(s[0], s[1]), builder.fadd(s[2], s[3]))
            builder.store(total, builder.gep(out_data, [builder.add(start, ir.Constant(intp, r))]))
        return context.get_dummy_value()

    return sig, codegen


#: (cast for mypy: Numba's stub types an intrinsic's call with the typing context first)
_dot_rows4 = cast(Callable[..., None], intrinsic(_dot_rows4_typed))


@kernel(inline="always")
def dot_rows4(L, j0, b, out):
    """``out[j0 + k] = dot(L[j0 + k], b, j0 + k + 1)`` for ``k < 4`` (``j0`` a multiple of 4;
    ``L``, ``b`` and ``out`` C-contiguous float64 arrays): the products with ``b`` of four
    consecutive rows of a lower-triangular ``L``, bit for bit :func:`dot`."""
    _dot_rows4(L, j0, b, out)


def _carlson_dot_typed(typingctx, row, n, e, fj, beta, gam, b):
    """:func:`carlson_dot`: the first ``4 floor(n / 4)`` entries four at a time in the lanes of
    a vector (the product's four partial sums in the lanes of another), the rest one at a time
    into the first sum, in order. ``row``, ``e`` and ``b`` are C-contiguous float64 arrays; the
    caller keeps ``n`` within each."""
    if not (_contiguous(row, 1) and _contiguous(e, 1) and _contiguous(b, 1)
            and isinstance(n, types.Integer)
            and all(isinstance(t, types.Float) for t in (fj, beta, gam))):
        return None
    sig = types.float64(row, n, e, fj, beta, gam, b)

    def codegen(context, builder, signature, args):
        row_type, n_type, e_type = signature.args[:3]
        row_data = context.make_array(row_type)(context, builder, args[0]).data
        e_data = context.make_array(e_type)(context, builder, args[2]).data
        b_data = context.make_array(signature.args[6])(context, builder, args[6]).data
        count = context.cast(builder, args[1], n_type, types.intp)
        f_j, beta_j, gam_j = (context.cast(builder, args[k], signature.args[k], types.float64)
                              for k in (3, 4, 5))
        intp = count.type
        f_v, beta_v, gam_v = (_splat(builder, x) for x in (f_j, beta_j, gam_j))

        def at(pointer, i, vector):
            return _vector_at(builder, pointer, i) if vector else builder.gep(pointer, [i])

        def step(i, vector, f, beta, gam):
            """Entry (or entries) ``i``: the row's new value, ``e`` moved on; returns the new
            value's product with ``b``."""
            align = 8 if vector else None
            u = builder.load(at(row_data, i, vector), align=align)
            e_i = builder.load(at(e_data, i, vector), align=align)
            new = builder.fsub(builder.fmul(beta, u), builder.fmul(gam, e_i))
            builder.store(new, at(row_data, i, vector), align=align)
            builder.store(builder.fadd(e_i, builder.fmul(f, u)), at(e_data, i, vector),
                          align=align)
            return builder.fmul(new, builder.load(at(b_data, i, vector), align=align))

        sums = cgutils.alloca_once_value(builder, ir.Constant(_LANES, [0.0] * 4))
        n_steps = builder.ashr(count, ir.Constant(intp, 2))
        with cgutils.for_range(builder, n_steps) as loop:
            i = builder.shl(loop.index, ir.Constant(intp, 2))
            builder.store(builder.fadd(builder.load(sums), step(i, True, f_v, beta_v, gam_v)),
                          sums)
        s = [builder.extract_element(builder.load(sums), ir.Constant(ir.IntType(32), k))
             for k in range(4)]
        first = cgutils.alloca_once_value(builder, s[0])
        done = builder.shl(n_steps, ir.Constant(intp, 2))
        with cgutils.for_range(builder, builder.sub(count, done)) as loop:
            term = step(builder.add(done, loop.index), False, f_j, beta_j, gam_j)
            builder.store(builder.fadd(builder.load(first), term), first)
        return builder.fadd(builder.fadd(builder.load(first), s[1]), builder.fadd(s[2], s[3]))

    return sig, codegen


#: (cast for mypy, as :data:`_dot_rows4`)
_carlson_dot = cast(Callable[..., float], intrinsic(_carlson_dot_typed))


@kernel(inline="always")
def carlson_dot(row, n, e, fj, beta, gam, b):
    """One row of Carlson's step on its first ``n`` entries (``row[i] = beta row[i] - gam
    e[i]``, then ``e[i] += fj row[i]`` with the row's old value), returning the new row's
    :func:`dot` with ``b``; the same bits as the step entry by entry followed by :func:`dot`.
    ``row``, ``e`` and ``b``: C-contiguous float64 arrays."""
    return _carlson_dot(row, n, e, fj, beta, gam, b)


def _dynamic_rows4_typed(typingctx, S, j0, f, pu, phi, v, rw):
    """:func:`dynamic_rows4`: entries ``i < 4 floor(f / 4)`` four at a time in the lanes of a
    vector (the diagonal's random-walk variance added in its lane by a select, which leaves the
    other lanes' bits alone, a signed zero included), the rest one at a time. ``S`` (2-D),
    ``pu``, ``phi`` and ``v`` are C-contiguous float64 arrays; the caller keeps every index in
    bounds."""
    if not (_contiguous(S, 2) and _contiguous(pu, 1) and _contiguous(phi, 1)
            and _contiguous(v, 1) and isinstance(j0, types.Integer)
            and isinstance(f, types.Integer) and isinstance(rw, types.Float)):
        return None
    sig = types.void(S, j0, f, pu, phi, v, rw)

    def codegen(context, builder, signature, args):
        S_type, j0_type, f_type, pu_type, phi_type, v_type, rw_type = signature.args
        S_arr = context.make_array(S_type)(context, builder, args[0])
        pu_data = context.make_array(pu_type)(context, builder, args[3]).data
        phi_data = context.make_array(phi_type)(context, builder, args[4]).data
        v_data = context.make_array(v_type)(context, builder, args[5]).data
        start = context.cast(builder, args[1], j0_type, types.intp)
        count = context.cast(builder, args[2], f_type, types.intp)
        rw = context.cast(builder, args[6], rw_type, types.float64)
        intp = start.type
        i32 = ir.IntType(32)
        # rows j0 to j0 + 3, and the next four (only prefetched, whether they exist or not)
        rows_and_ahead = _row_pointers(context, builder, S_arr, start, 8)
        rows, ahead = rows_and_ahead[:4], rows_and_ahead[4:]
        u = [builder.load(builder.gep(pu_data, [builder.add(start, ir.Constant(intp, r))]))
             for r in range(4)]
        p = [builder.load(builder.gep(phi_data, [builder.add(start, ir.Constant(intp, r))]))
             for r in range(4)]
        u_v = [_splat(builder, x) for x in u]
        p_v = [_splat(builder, x) for x in p]
        rw_v = _splat(builder, rw)
        i8_ptr = ir.IntType(8).as_pointer()
        prefetch = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8_ptr, i32, i32, i32]),
            "llvm.prefetch.p0i8")

        def chunk(i, diagonal):
            """Entries ``i`` to ``i + 3`` of the four rows and of ``v``."""
            for pointer in ahead:  # (a read, kept in every cache level; never faults)
                builder.call(prefetch, [builder.bitcast(builder.gep(pointer, [i]), i8_ptr),
                                        ir.Constant(i32, 0), ir.Constant(i32, 3),
                                        ir.Constant(i32, 1)])
            pu_i = builder.load(_vector_at(builder, pu_data, i), align=8)
            v_i = builder.load(_vector_at(builder, v_data, i), align=8)
            for r in range(4):
                x = builder.fsub(builder.load(_vector_at(builder, rows[r], i), align=8),
                                 builder.fmul(u_v[r], pu_i))
                if diagonal:  # entry j0 + r of row j0 + r: the random walk's variance
                    lane = ir.Constant(ir.VectorType(ir.IntType(1), 4), [k == r for k in range(4)])
                    x = builder.select(lane, builder.fadd(x, rw_v), x)
                builder.store(x, _vector_at(builder, rows[r], i), align=8)
                v_i = builder.fadd(v_i, builder.fmul(x, p_v[r]))
            builder.store(v_i, _vector_at(builder, v_data, i), align=8)

        four = ir.Constant(intp, 4)
        two = ir.Constant(intp, 2)
        with cgutils.for_range(builder, builder.ashr(start, two)) as loop:  # left of the diagonal
            chunk(builder.shl(loop.index, two), False)
        chunk(start, True)
        after = builder.add(start, four)
        n_full = builder.ashr(count, two)
        with cgutils.for_range(builder, builder.sub(n_full, builder.ashr(after, two))) as loop:
            chunk(builder.add(after, builder.shl(loop.index, two)), False)
        done = builder.shl(n_full, two)  # the last f % 4 entries, right of every diagonal
        with cgutils.for_range(builder, builder.sub(count, done)) as loop:
            i = builder.add(done, loop.index)
            pu_i = builder.load(builder.gep(pu_data, [i]))
            v_i = builder.load(builder.gep(v_data, [i]))
            for r in range(4):
                pointer = builder.gep(rows[r], [i])
                x = builder.fsub(builder.load(pointer), builder.fmul(u[r], pu_i))
                builder.store(x, pointer)
                v_i = builder.fadd(v_i, builder.fmul(x, p[r]))
            builder.store(v_i, builder.gep(v_data, [i]))
        return context.get_dummy_value()

    return sig, codegen


#: (cast for mypy, as :data:`_dot_rows4`)
_dynamic_rows4 = cast(Callable[..., None], intrinsic(_dynamic_rows4_typed))


@kernel(inline="always")
def dynamic_rows4(S, j0, f, pu, phi, v, rw):
    """Rows ``j0`` to ``j0 + 3`` of a dynamic member's owed update and product, on the first
    ``f`` entries (``j0`` a multiple of 4, ``j0 + 4 <= f``): for each row ``j`` in turn,
    ``S[j] -= pu[j] pu``, ``S[j, j] += rw``, then ``v += S[j] phi[j]``; the same bits as the rows
    one at a time. ``S``, ``pu``, ``phi`` and ``v``: C-contiguous float64 arrays."""
    _dynamic_rows4(S, j0, f, pu, phi, v, rw)
