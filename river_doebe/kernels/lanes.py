"""Dot products in four fixed partial sums, the same bits on every machine, and four rows of a
triangular matrix at a time in vector registers. Numba intrinsics (LLVM's IR through llvmlite),
called from the stack's kernels.

The stack kernels sum a dot product ``a' b`` over ``i < n`` in four partial sums: element ``i``
of the first ``4 floor(n / 4)`` goes to sum ``i mod 4``, the remaining ones to sum 0 in order,
and the result is ``(s0 + s1) + (s2 + s3)`` (*the four-sum order*). The order is fixed in the
code, so a model gives the same numbers on every machine, whatever its vector width.

Written as scalar Numba code, those four sums are four scalar chains: LLVM vectorises a sum
only when it may reorder it (``fastmath``), and then the machine's vector width would decide
the order, and the numbers. Here the four partial sums of a row are the four lanes of one
vector register: each lane multiplies and adds exactly as the scalar code would (IEEE
arithmetic lane by lane, no reordering, no fused multiply-add). :data:`triangular_products`
gives a static member's prediction, the product of every row of its triangular factor with the
features (:func:`river_doebe.kernels.stack.predict_member`), four rows side by side: four
independent vector sums, which keep the floating-point units busy where one chain would wait
for each addition in turn.

When the sweep also applies a static member's owed update, :data:`carlson_rows4` does four
rows' steps of Carlson's update and their products together: the running vector ``e`` is loaded
once, taken through the four rows in a vector register and stored once, and each row's product
has its own four partial sums; the rows past the last group of four go one at a time
(:data:`carlson_dot`: a row's step and its product in one pass, four entries at a time). Each
entry of a row and of ``e`` takes the scalar step's operations (lane by lane, in the same
order, without fused multiply-adds).

A dynamic member's owed update and product (:data:`dynamic_sweep`) go four rows at a time:
four entries of ``v = Sigma_pred phi`` stay in a vector register through four rows, which
saves three of every four loads and stores of ``v``; no sum changes its order, since each entry
of ``v`` still adds the rows in turn. A group of rows with a zero feature (a sparse input), or
a sweep that only applies the update or only predicts, goes row by row. Four rows read side by
side are four streams where one row after the other is one, and the hardware's prefetcher falls
behind on them once the stack lives beyond the core's cache: the kernel asks for the next four
rows itself as it goes.

The loops are in LLVM's IR rather than in Numba code for the compile as well: Numba's front end
takes longer over a loop than LLVM does (``benchmarks/results/engine.md``). Each function here
is a Numba intrinsic, called from jitted code only; ``tests/test_sweeps.py`` checks each against
the scalar loops, bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

__all__ = ["carlson_dot", "carlson_rows4", "dynamic_sweep", "triangular_products"]


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


def _prefetcher(builder: Any) -> Callable[[list, Any], None]:
    """A function that emits a prefetch of entry ``i`` of each of the given rows (pointers to
    float64 entries): a read, kept in every cache level, which never faults (a row past the
    array's end may be named)."""
    i8_ptr = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    prefetch = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [i8_ptr, i32, i32, i32]),
        "llvm.prefetch.p0i8")

    def emit(pointers: list, i: Any) -> None:
        for pointer in pointers:
            builder.call(prefetch, [builder.bitcast(builder.gep(pointer, [i]), i8_ptr),
                                    ir.Constant(i32, 0), ir.Constant(i32, 3),
                                    ir.Constant(i32, 1)])

    return emit


def _rows4_products(context: Any, builder: Any, L_arr: Any, b_data: Any, out_data: Any,
                    start: Any) -> None:
    """Emit ``out[j]``, row ``j`` of ``L`` times ``b`` over its ``j + 1`` first entries in the
    four-sum order, for the four rows ``j = start .. start + 3``
    (``start`` a multiple of 4): the entries below ``start`` with each row's four partial sums
    in the lanes of one vector, the four rows side by side; then the rest of each row as the
    scalar sum takes it (row ``start + 3`` one more step of the four sums, the others their
    ``r + 1`` last entries into the first sum, in order)."""
    intp = start.type
    rows = _row_pointers(context, builder, L_arr, start, 4)
    sums = [cgutils.alloca_once_value(builder, ir.Constant(_LANES, [0.0] * 4))
            for _ in range(4)]

    def product(r, k):  # L[start + r, start + k] * b[start + k]
        i = builder.add(start, ir.Constant(intp, k))
        return builder.fmul(builder.load(builder.gep(rows[r], [i])),
                            builder.load(builder.gep(b_data, [i])))

    n_steps = builder.ashr(start, ir.Constant(intp, 2))
    with cgutils.for_range(builder, n_steps) as loop:
        i = builder.shl(loop.index, ir.Constant(intp, 2))
        bi = builder.load(_vector_at(builder, b_data, i), align=8)
        for r in range(4):
            x = builder.load(_vector_at(builder, rows[r], i), align=8)
            builder.store(builder.fadd(builder.load(sums[r]), builder.fmul(x, bi)), sums[r])
    for r in range(4):
        s = [builder.extract_element(builder.load(sums[r]), ir.Constant(ir.IntType(32), k))
             for k in range(4)]
        if r == 3:
            s = [builder.fadd(s[k], product(r, k)) for k in range(4)]
        else:
            for k in range(r + 1):
                s[0] = builder.fadd(s[0], product(r, k))
        total = builder.fadd(builder.fadd(s[0], s[1]), builder.fadd(s[2], s[3]))
        builder.store(total, builder.gep(out_data, [builder.add(start, ir.Constant(intp, r))]))


def _triangular_products_typed(typingctx, L, n, b, out):
    """:data:`triangular_products`: ``L`` (2-D), ``b`` and ``out`` (1-D) C-contiguous float64
    arrays, ``n`` an integer; the caller keeps ``n`` within each."""
    if not (_contiguous(L, 2) and _contiguous(b, 1) and _contiguous(out, 1)
            and isinstance(n, types.Integer)):
        return None
    sig = types.void(L, n, b, out)

    def codegen(context, builder, signature, args):
        L_type, n_type, b_type, out_type = signature.args
        L_arr = context.make_array(L_type)(context, builder, args[0])
        b_data = context.make_array(b_type)(context, builder, args[2]).data
        out_data = context.make_array(out_type)(context, builder, args[3]).data
        count = context.cast(builder, args[1], n_type, types.intp)
        intp = count.type
        two = ir.Constant(intp, 2)
        groups = builder.ashr(count, two)
        with cgutils.for_range(builder, groups) as loop:
            _rows4_products(context, builder, L_arr, b_data, out_data,
                            builder.shl(loop.index, two))
        # the last n mod 4 rows, j = 4 q + r (q groups): q steps of the four sums, then their
        # r + 1 last entries into the first sum, in order
        done = builder.shl(groups, two)
        with cgutils.for_range(builder, builder.sub(count, done)) as tail:
            j = builder.add(done, tail.index)
            row = _row_pointers(context, builder, L_arr, j, 1)[0]
            sums = cgutils.alloca_once_value(builder, ir.Constant(_LANES, [0.0] * 4))
            with cgutils.for_range(builder, groups) as loop:
                i = builder.shl(loop.index, two)
                x = builder.fmul(builder.load(_vector_at(builder, row, i), align=8),
                                 builder.load(_vector_at(builder, b_data, i), align=8))
                builder.store(builder.fadd(builder.load(sums), x), sums)
            s = [builder.extract_element(builder.load(sums), ir.Constant(ir.IntType(32), k))
                 for k in range(4)]
            first = cgutils.alloca_once_value(builder, s[0])
            with cgutils.for_range(builder, builder.add(tail.index, ir.Constant(intp, 1))) as k:
                i = builder.add(done, k.index)
                x = builder.fmul(builder.load(builder.gep(row, [i])),
                                 builder.load(builder.gep(b_data, [i])))
                builder.store(builder.fadd(builder.load(first), x), first)
            total = builder.fadd(builder.fadd(builder.load(first), s[1]), builder.fadd(s[2], s[3]))
            builder.store(total, builder.gep(out_data, [j]))
        return context.get_dummy_value()

    return sig, codegen


#: (cast for mypy: Numba's stub types an intrinsic's call with the typing context first)
triangular_products = cast(Callable[..., None], intrinsic(_triangular_products_typed))
"""``triangular_products(L, n, b, out)``: ``out[j]`` the product of row ``j`` of a
lower-triangular ``L`` with ``b`` over its ``j + 1`` first entries, in the four-sum order, for
``j < n``: the rows four at a time, the four partial sums of each in the lanes of one vector,
the last ``n mod 4`` one at a time. ``L`` (2-D), ``b`` and ``out`` (1-D): C-contiguous float64
arrays."""


def _carlson_step(builder: Any, row: Any, e: Any, b: Any, i: Any, vector: bool, f: Any,
                  beta: Any, gam: Any) -> Any:
    """Emit Carlson's step on entry ``i`` of a row (entries ``i`` to ``i + 3`` in the lanes of a
    vector with ``vector``; ``f``, ``beta``, ``gam`` then vectors too): ``row[i] = beta row[i] -
    gam e[i]``, then ``e[i] += f row[i]`` with the row's old value; returns the new value's
    product with ``b[i]`` (``row``, ``e``, ``b``: pointers to float64 entries)."""
    def at(pointer):
        return _vector_at(builder, pointer, i) if vector else builder.gep(pointer, [i])

    align = 8 if vector else None
    u = builder.load(at(row), align=align)
    e_i = builder.load(at(e), align=align)
    new = builder.fsub(builder.fmul(beta, u), builder.fmul(gam, e_i))
    builder.store(new, at(row), align=align)
    builder.store(builder.fadd(e_i, builder.fmul(f, u)), at(e), align=align)
    return builder.fmul(new, builder.load(at(b), align=align))


def _carlson_dot_typed(typingctx, row, n, e, fj, beta, gam, b):
    """:data:`carlson_dot`: the first ``4 floor(n / 4)`` entries four at a time in the lanes of
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

        def step(i, vector, f, beta, gam):
            return _carlson_step(builder, row_data, e_data, b_data, i, vector, f, beta, gam)

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


carlson_dot = cast(Callable[..., float], intrinsic(_carlson_dot_typed))
"""``carlson_dot(row, n, e, fj, beta, gam, b)``: one row of Carlson's step on its first ``n``
entries (``row[i] = beta row[i] - gam e[i]``, then ``e[i] += fj row[i]`` with the row's old
value), returning the new row's product with ``b`` in the four-sum order; the same bits as the
step entry by entry followed by the scalar sum. ``row``, ``e`` and ``b``: C-contiguous float64
arrays."""


def _carlson_rows4_typed(typingctx, L, start, e, pf, b, out, sa):
    """:data:`carlson_rows4`: ``L`` (2-D), ``e``, ``pf``, ``b`` and ``out`` (1-D) C-contiguous
    float64 arrays, ``start`` an integer (a multiple of 4, its four rows within ``L``), ``sa`` a
    float."""
    if not (_contiguous(L, 2) and all(_contiguous(a, 1) for a in (e, pf, b, out))
            and isinstance(start, types.Integer) and isinstance(sa, types.Float)):
        return None
    sig = types.float64(L, start, e, pf, b, out, sa)

    def codegen(context, builder, signature, args):
        L_type, start_type = signature.args[:2]
        L_arr = context.make_array(L_type)(context, builder, args[0])
        e_data, pf_data, b_data, out_data = (
            context.make_array(signature.args[k])(context, builder, args[k]).data
            for k in (2, 3, 4, 5))
        start = context.cast(builder, args[1], start_type, types.intp)
        sa = context.cast(builder, args[6], signature.args[6], types.float64)
        intp = start.type
        i32 = ir.IntType(32)
        rows_and_ahead = _row_pointers(context, builder, L_arr, start, 8)
        rows, ahead = rows_and_ahead[:4], rows_and_ahead[4:]
        # each row's coefficients, as the row-by-row step takes them: sb = sqrt(alpha_j) (in e
        # until the row's turn), beta = sa / sb, gam = f_j / (sa sb), then sa = sb
        f, beta, gam = [], [], []
        for r in range(4):
            j = builder.add(start, ir.Constant(intp, r))
            sb = builder.load(builder.gep(e_data, [j]))
            f.append(builder.load(builder.gep(pf_data, [j])))
            beta.append(builder.fdiv(sa, sb))
            gam.append(builder.fdiv(f[r], builder.fmul(sa, sb)))
            sa = sb
        f_v, beta_v, gam_v = ([_splat(builder, x) for x in xs] for xs in (f, beta, gam))
        sums = [cgutils.alloca_once_value(builder, ir.Constant(_LANES, [0.0] * 4))
                for _ in range(4)]
        prefetch = _prefetcher(builder)
        # the entries left of the four rows' triangle, four at a time: e stays in a vector
        # register through the four rows (each entry takes its rows in turn, as row by row)
        with cgutils.for_range(builder, builder.ashr(start, ir.Constant(intp, 2))) as loop:
            i = builder.shl(loop.index, ir.Constant(intp, 2))
            prefetch(ahead, i)
            e_i = builder.load(_vector_at(builder, e_data, i), align=8)
            b_i = builder.load(_vector_at(builder, b_data, i), align=8)
            for r in range(4):
                u = builder.load(_vector_at(builder, rows[r], i), align=8)
                new = builder.fsub(builder.fmul(beta_v[r], u), builder.fmul(gam_v[r], e_i))
                builder.store(new, _vector_at(builder, rows[r], i), align=8)
                e_i = builder.fadd(e_i, builder.fmul(f_v[r], u))
                builder.store(builder.fadd(builder.load(sums[r]), builder.fmul(new, b_i)),
                              sums[r])
            builder.store(e_i, _vector_at(builder, e_data, i), align=8)
        # the triangle, row after row: row start + r's r + 1 last entries (its e entry zeroed
        # first), into its first sum in order, or for the last row into its four sums
        for r in range(4):
            s = [builder.extract_element(builder.load(sums[r]), ir.Constant(i32, k))
                 for k in range(4)]
            j = builder.add(start, ir.Constant(intp, r))
            builder.store(ir.Constant(ir.DoubleType(), 0.0), builder.gep(e_data, [j]))
            for k in range(r + 1):
                i = builder.add(start, ir.Constant(intp, k))
                lane = k if r == 3 else 0
                s[lane] = builder.fadd(s[lane], _carlson_step(
                    builder, rows[r], e_data, b_data, i, False, f[r], beta[r], gam[r]))
            total = builder.fadd(builder.fadd(s[0], s[1]), builder.fadd(s[2], s[3]))
            builder.store(total, builder.gep(out_data, [j]))
        return sa

    return sig, codegen


carlson_rows4 = cast(Callable[..., float], intrinsic(_carlson_rows4_typed))
"""``carlson_rows4(L, start, e, pf, b, out, sa)``: rows ``start`` to ``start + 3`` (``start`` a
multiple of 4) of Carlson's step on a lower-triangular factor ``L``, each row's product with
``b`` into ``out`` in the four-sum order: the same bits as four rows of the row-by-row step
(:data:`carlson_dot`). ``e`` holds the running vector left of ``start`` and, at entries
``start`` to ``start + 3``, the rows' ``sqrt(alpha_j)`` (each row zeroes its entry, as the
row-by-row step does); ``pf`` is the update's ``f`` and ``sa`` the ``sqrt(alpha)`` of the row
before ``start``. Returns ``sqrt(alpha)`` of the last row, the next group's ``sa``. The entries
left of the rows' triangle go four at a time, each in vector lanes through the four rows: ``e``
is loaded and stored once for four rows, and each row's product has its own four partial sums;
the next four rows are prefetched. ``L``, ``e``, ``pf``, ``b`` and ``out``: C-contiguous
float64 arrays."""


def _dynamic_rows4(context: Any, builder: Any, S_arr: Any, start: Any, count: Any,
                   pu_data: Any, phi_data: Any, v_data: Any, rw: Any) -> None:
    """Emit rows ``start`` to ``start + 3`` of the owed update and product (``start`` a multiple
    of 4, ``start + 4 <= count``): entries ``i < 4 floor(count / 4)`` four at a time in the
    lanes of a vector (the diagonal's random-walk variance added in its lane by a select, which
    leaves the other lanes' bits alone, a signed zero included), the rest one at a time."""
    intp = start.type
    # rows start to start + 3, and the next four (only prefetched, whether they exist or not)
    rows_and_ahead = _row_pointers(context, builder, S_arr, start, 8)
    rows, ahead = rows_and_ahead[:4], rows_and_ahead[4:]
    u = [builder.load(builder.gep(pu_data, [builder.add(start, ir.Constant(intp, r))]))
         for r in range(4)]
    p = [builder.load(builder.gep(phi_data, [builder.add(start, ir.Constant(intp, r))]))
         for r in range(4)]
    u_v = [_splat(builder, x) for x in u]
    p_v = [_splat(builder, x) for x in p]
    rw_v = _splat(builder, rw)
    prefetch = _prefetcher(builder)

    def chunk(i, diagonal):
        """Entries ``i`` to ``i + 3`` of the four rows and of ``v``."""
        prefetch(ahead, i)
        pu_i = builder.load(_vector_at(builder, pu_data, i), align=8)
        v_i = builder.load(_vector_at(builder, v_data, i), align=8)
        for r in range(4):
            x = builder.fsub(builder.load(_vector_at(builder, rows[r], i), align=8),
                             builder.fmul(u_v[r], pu_i))
            if diagonal:  # entry start + r of row start + r: the random walk's variance
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
    done = builder.shl(n_full, two)  # the last count % 4 entries, right of every diagonal
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


def _axpy(builder: Any, dst: Any, src: Any, scale: Any, count: Any, subtract: bool) -> None:
    """Emit ``dst[i] = dst[i] - src[i] scale`` (``subtract``; else ``+``) for ``i < count``: four
    entries at a time in the lanes of a vector, the rest one at a time (each entry the scalar
    operations)."""
    intp = count.type
    two = ir.Constant(intp, 2)
    combine = builder.fsub if subtract else builder.fadd
    scale_v = _splat(builder, scale)
    n_full = builder.ashr(count, two)
    with cgutils.for_range(builder, n_full) as loop:
        i = builder.shl(loop.index, two)
        x = builder.fmul(builder.load(_vector_at(builder, src, i), align=8), scale_v)
        d = builder.load(_vector_at(builder, dst, i), align=8)
        builder.store(combine(d, x), _vector_at(builder, dst, i), align=8)
    done = builder.shl(n_full, two)
    with cgutils.for_range(builder, builder.sub(count, done)) as loop:
        i = builder.add(done, loop.index)
        x = builder.fmul(builder.load(builder.gep(src, [i])), scale)
        builder.store(combine(builder.load(builder.gep(dst, [i])), x), builder.gep(dst, [i]))


def _dynamic_sweep_typed(typingctx, S, f, pu, phi, v, rw, owes, want):
    """:data:`dynamic_sweep`: ``S`` (2-D), ``pu``, ``phi`` and ``v`` C-contiguous float64 arrays,
    ``f`` an integer within each, ``rw`` a float, ``owes`` and ``want`` booleans."""
    if not (_contiguous(S, 2) and _contiguous(pu, 1) and _contiguous(phi, 1)
            and _contiguous(v, 1) and isinstance(f, types.Integer)
            and isinstance(rw, types.Float) and isinstance(owes, types.Boolean)
            and isinstance(want, types.Boolean)):
        return None
    sig = types.void(S, f, pu, phi, v, rw, owes, want)

    def codegen(context, builder, signature, args):
        S_type, f_type, pu_type, phi_type, v_type, rw_type = signature.args[:6]
        S_arr = context.make_array(S_type)(context, builder, args[0])
        pu_data = context.make_array(pu_type)(context, builder, args[2]).data
        phi_data = context.make_array(phi_type)(context, builder, args[3]).data
        v_data = context.make_array(v_type)(context, builder, args[4]).data
        count = context.cast(builder, args[1], f_type, types.intp)
        rw = context.cast(builder, args[5], rw_type, types.float64)
        owes = context.cast(builder, args[6], signature.args[6], types.boolean)
        want = context.cast(builder, args[7], signature.args[7], types.boolean)
        intp = count.type
        zero = ir.Constant(ir.DoubleType(), 0.0)
        with builder.if_then(want):  # v = rw phi, then each row's product added in turn
            with cgutils.for_range(builder, count) as loop:
                i = loop.index
                builder.store(builder.fmul(rw, builder.load(builder.gep(phi_data, [i]))),
                              builder.gep(v_data, [i]))
        n_groups = builder.ashr(builder.add(count, ir.Constant(intp, 3)), ir.Constant(intp, 2))
        four_rows = cgutils.alloca_once(builder, ir.IntType(1))
        with cgutils.for_range(builder, n_groups) as group:
            start = builder.shl(group.index, ir.Constant(intp, 2))
            end = builder.add(start, ir.Constant(intp, 4))
            builder.store(cgutils.false_bit, four_rows)
            # four rows in lanes when the update is owed, the product wanted, and none of the
            # group's features is 0 (phi is read only for a whole group within f)
            whole = builder.and_(builder.and_(owes, want),
                                 builder.icmp_signed("<=", end, count))
            with builder.if_then(whole):
                nonzero = cgutils.true_bit
                for r in range(4):
                    x = builder.load(builder.gep(phi_data,
                                                 [builder.add(start, ir.Constant(intp, r))]))
                    nonzero = builder.and_(nonzero, builder.fcmp_unordered("!=", x, zero))
                builder.store(nonzero, four_rows)
            with builder.if_else(builder.load(four_rows)) as (lanes, one_by_one):
                with lanes:
                    _dynamic_rows4(context, builder, S_arr, start, count, pu_data, phi_data,
                                   v_data, rw)
                with one_by_one:
                    # row by row; a row with a zero feature adds nothing to v (a sparse input),
                    # nor its rounding
                    last = builder.select(builder.icmp_signed("<", end, count), end, count)
                    with cgutils.for_range(builder, builder.sub(last, start)) as row_loop:
                        j = builder.add(start, row_loop.index)
                        row = _row_pointers(context, builder, S_arr, j, 1)[0]
                        with builder.if_then(owes):
                            uj = builder.load(builder.gep(pu_data, [j]))
                            _axpy(builder, row, pu_data, uj, count, True)
                            diagonal = builder.gep(row, [j])
                            builder.store(builder.fadd(builder.load(diagonal), rw), diagonal)
                        with builder.if_then(want):
                            pj = builder.load(builder.gep(phi_data, [j]))
                            with builder.if_then(builder.fcmp_unordered("!=", pj, zero)):
                                _axpy(builder, v_data, row, pj, count, False)
        return context.get_dummy_value()

    return sig, codegen


#: (cast for mypy, as :data:`triangular_products`)
dynamic_sweep = cast(Callable[..., None], intrinsic(_dynamic_sweep_typed))
"""``dynamic_sweep(S, f, pu, phi, v, rw, owes, want)``: one pass over a dynamic member's
``Sigma`` (``S``, its first ``f`` rows and columns): with ``owes`` apply the owed ``Sigma += rw I
- pu pu'``, and with ``want`` write ``v = (Sigma + rw I) phi``, each row updated in full before
it is read (the same numbers as applying the update first and predicting afterwards). For each
row ``j`` in turn: ``S[j] -= pu[j] pu``, ``S[j, j] += rw``, then ``v += S[j] phi[j]`` (``v``
starts at ``rw phi``; a row whose feature is 0 adds nothing, nor its rounding). The rows go four
at a time when the update is owed, the product wanted and none of their features is 0: four
entries of ``v`` then stay in a vector register through four rows, and the next four rows are
prefetched; else one at a time, four entries at a time in vector lanes. The same bits as the
rows one at a time in scalar code. ``S``, ``pu``, ``phi`` and ``v``: C-contiguous float64
arrays."""
