"""How long one round of an idle OpenMP thread's wait lasts on this processor.

The GNU OpenMP runtime (libgomp, behind Numba's ``omp`` threading layer) keeps a thread that has
run out of work spinning for ``GOMP_SPINCOUNT`` rounds before it sleeps; on x86 each round reads
a flag and issues the processor's ``pause`` hint. How long a ``pause`` takes differs between
processors (9 ns on one machine of ``benchmarks/results/engine.md``, where the count chosen on
another meant about 50 ns a round), so a count of rounds is no fixed time.
:func:`round_seconds` times a loop of the same hint here, so that
:mod:`river_doebe.engine.threads` can set the count that lasts the time it wants.

On other processors libgomp's rounds are a load of the flag and no hint at all; they are not
timed here (:func:`round_seconds` gives ``None``).
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable
from typing import Any, cast

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from river_doebe.kernels.jit import kernel

__all__ = ["X86", "round_seconds"]

#: whether this is an x86 processor, whose ``pause`` libgomp's spin issues (and LLVM names
#: ``llvm.x86.sse2.pause``)
X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


def _pause_typed(typingctx: Any) -> Any:
    """x86's ``pause``: the hint of each round of libgomp's spin (a call from jitted code)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        hint = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), []),
                                              "llvm.x86.sse2.pause")
        builder.call(hint, [])
        return context.get_dummy_value()

    return types.void(), codegen


# (typed as what jitted code calls)
_pause = cast(Callable[[], None], intrinsic(_pause_typed))


@kernel()
def _pauses(rounds: int) -> int:
    for _ in range(rounds):
        _pause()
    return rounds


def round_seconds(rounds: int = 20_000, repeats: int = 5) -> float | None:
    """The seconds of one ``pause`` here: the best of ``repeats`` loops of ``rounds`` (the best,
    as a descheduled thread only makes a loop longer); ``None`` off x86. A loop of the default
    length takes about 0.2 to 1 ms; the first call in a process without the on-disk cache also
    compiles the loop (a fraction of a second)."""
    if not X86:
        return None
    _pauses(1)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter_ns()
        _pauses(rounds)
        best = min(best, time.perf_counter_ns() - start)
    return best / rounds / 1e9
