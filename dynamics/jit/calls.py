"""Calls into machine code from numba's LLVM code generation: arrays borrowed (views without a
reference count; :mod:`.views`), machine code of a kernel for given types, and a key of numba
types that is the same in every process.  Used by the chunked doors (:mod:`.doors`) and the
table of linked kernels (:mod:`.linking`)."""

import hashlib

from numba.core import types


def borrow(context, builder, aryty, value):
    src = context.make_array(aryty)(context, builder, value)
    view = context.make_array(aryty)(context, builder)
    context.populate_array(view, data=src.data, shape=src.shape, strides=src.strides,
                           itemsize=src.itemsize, meminfo=None)
    return view._getvalue()


def call_address(context, builder, address, restype, argtypes, packed):
    """Call the machine code at ``address`` (an LLVM i64) with numba's calling convention on the
    values of the LLVM tuple ``packed`` (of numba types ``argtypes``), their arrays borrowed:
    (the call's status, its value)."""
    values = [borrow_all(context, builder, t, builder.extract_value(packed, i))
              for i, t in enumerate(argtypes)]
    fnty = context.call_conv.get_function_type(restype, argtypes)
    fn = builder.inttoptr(address, fnty.as_pointer())
    return context.call_conv.call_function(builder, fn, restype, argtypes, values)


def borrow_all(context, builder, ty, value):
    """``value`` with every array in it (at any depth of tuples) borrowed (module docstring)."""
    if isinstance(ty, types.Array):
        return borrow(context, builder, ty, value)
    if isinstance(ty, types.BaseTuple):
        items = [borrow_all(context, builder, t, builder.extract_value(value, i))
                 for i, t in enumerate(ty)]
        return context.make_tuple(builder, ty, items)
    return value


def types_key(argtypes):
    """A key of numba types, the same in every process (the door that checks it is cached)."""
    digest = hashlib.blake2b(str(tuple(argtypes)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def machine_code(kernel, argtypes):
    """(address, library) of ``kernel``'s machine code for the numba types ``argtypes``, compiled
    or loaded from the cache (the library holds the code: keep it)."""
    kernel.compile(argtypes)
    cres = kernel.overloads[argtypes]
    return cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name), cres.library
