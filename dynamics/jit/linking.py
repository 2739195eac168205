"""Linked kernels: a table of machine-code addresses that compiled code calls through.

(:func:`link`), not by name.  Called by name, numba would compile its whole call tree into
every caller, for every problem: on a cold first run of a problem without contacts, a quarter
of the compile time (``docs/design.md``).  The table is one array of this process, which the
compiled code finds by its symbol name (LLVM resolves it when it loads the code, compiled now
or from the cache), so that an address never leaves the process that made it (a record
holding one could be pickled to another process).
"""

import ctypes

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import typeof
from numba.core import cgutils, types
from numba.core.typing.typeof import Purpose
from numba.extending import intrinsic

from .calls import call_address as _call_address
from .calls import machine_code as _machine_code
from .calls import types_key as _types_key

#: the slots of the table (one per linked kernel; :mod:`ddp.kernels.records` names the solver's)
LINKED_SLOTS = 8
#: what :func:`call_linked` returns instead of the kernel's value: nothing was linked in the slot
#: for these argument types; the kernel raised
NOT_LINKED, LINKED_RAISED = -1001, -1002
_TABLE_SYMBOL = "soddp_linked_kernels"
_TABLE = (ctypes.c_int64 * (2 * LINKED_SLOTS))()  # (address, key of the types) per slot
llvm.add_symbol(_TABLE_SYMBOL, ctypes.addressof(_TABLE))
_LINKED = {}  # slot -> (kernel, key, library) linked in this process


def argument_types(*values):
    """The numba types of ``values`` as a compiled kernel receives them (records, arrays)."""
    return tuple(typeof(v, Purpose.argument) for v in values)


def array_types(*ndims):
    """The numba types of C-contiguous float arrays of these numbers of dimensions."""
    return tuple(typeof(np.empty((0,) * k), Purpose.argument) for k in ndims)


def link(slot, kernel, argtypes):
    """Put the machine code of ``kernel`` for the numba types ``argtypes`` (compiled now, or
    loaded from the cache) in slot ``slot`` of the table that :func:`call_linked` calls through.
    Once per slot, kernel and types in a process."""
    key = _types_key(argtypes)
    held = _LINKED.get(slot)
    if held is not None and held[0] is kernel and held[1] == key:
        return
    address, library = _machine_code(kernel, tuple(argtypes))
    _LINKED[slot] = (kernel, key, library)
    _TABLE[2 * slot] = address
    _TABLE[2 * slot + 1] = key


@intrinsic
def call_linked(typingctx, slot, args):
    """The int64 that the kernel linked in slot ``slot`` (:func:`link`) returns for ``args`` (a
    tuple), its arrays borrowed as :func:`call_chunk`'s; :data:`NOT_LINKED` if the slot holds no
    kernel for the types of ``args`` (it is not called then), :data:`LINKED_RAISED` if it
    raised.  The caller must hold the arrays of ``args`` for the call."""
    if not (isinstance(slot, types.Integer) and isinstance(args, types.BaseTuple)):
        return None
    argtypes = tuple(args)
    key = _types_key(argtypes)

    def codegen(context, builder, signature, llargs):
        module = builder.module
        try:
            table = module.get_global(_TABLE_SYMBOL)
        except KeyError:
            table = ir.GlobalVariable(module, ir.ArrayType(ir.IntType(64), 2 * LINKED_SLOTS),
                                      _TABLE_SYMBOL)
            table.linkage = "external"
        i64 = ir.IntType(64)
        at = builder.mul(builder.sext(llargs[0], i64) if llargs[0].type != i64 else llargs[0],
                         i64(2))
        address = builder.load(builder.gep(table, [i64(0), at]))
        given = builder.load(builder.gep(table, [i64(0), builder.add(at, i64(1))]))
        result = cgutils.alloca_once_value(builder, i64(NOT_LINKED))
        fresh = builder.icmp_signed("==", given, i64(key))
        with builder.if_then(fresh, likely=True):
            called, value = _call_address(context, builder, address, types.int64, argtypes,
                                          llargs[1])
            builder.store(builder.select(called.is_error, i64(LINKED_RAISED), value), result)
        return builder.load(result)

    return types.int64(slot, args), codegen
