"""numba's inliner (``inline="always"``), without its quadratic copies of a scope.

To inline a function, numba copies the function's IR block by block, each block with
``copy.deepcopy`` and a memo of its own (``InlineWorker.inline_ir``).  Every variable refers to
the function's one scope, which holds every variable of the function, so each block's copy
copies the whole scope again: blocks times variables, twice per call site.  A cold
``soddp compare ur3`` spent about 10 % of its compile there (15 s of 143 in one process).

On import, this module makes the copies of a scope inside one ``inline_ir`` call share one
copy, as the blocks of the original share one scope: a scope copied again during the call,
unchanged since its first copy (same variables, in it and in its copy), gives that copy.  The
inliner renames the variables of the inlined copy into the caller's scope and then points the
blocks at the caller's scope, so the IR it returns, and the machine code, are those numba's
own copies give (``tests/test_compile_speed.py`` compares the LLVM IR of a kernel compiled with
and without).  Outside ``inline_ir``, a scope is copied as numba copies it.  Another numba
version whose ``Scope`` copies itself, or whose inliner has no ``inline_ir``, is left as it is.
"""

import copy

from numba.core import inline_closurecall, ir

from .numba_support import PATCHES

#: for each ``inline_ir`` call in progress: id(scope) -> (scope, its variables, its copy, the
#: copy's variables) for the scopes copied during the call
_COPIES = []


def _variables(scope) -> int:
    return len(scope.localvars._con)


def _copy_scope(scope, memo):
    """``copy.deepcopy(scope, memo)``; inside ``inline_ir``, one copy per unchanged scope."""
    copies = _COPIES[-1] if _COPIES else None
    if copies is not None:
        known = copies.get(id(scope))
        if (known is not None and known[0] is scope and known[1] == _variables(scope)
                and known[3] == _variables(known[2])):
            memo[id(scope)] = known[2]
            return known[2]
    new = object.__new__(type(scope))
    memo[id(scope)] = new
    for name, value in scope.__dict__.items():
        new.__dict__[name] = copy.deepcopy(value, memo)
    if copies is not None:
        copies[id(scope)] = (scope, _variables(scope), new, _variables(new))
    return new


def _inline_ir(self, *args, **kwargs):
    _COPIES.append({})
    try:
        return _NUMBA_INLINE_IR(self, *args, **kwargs)
    finally:
        _COPIES.pop()


_NUMBA_INLINE_IR = getattr(inline_closurecall.InlineWorker, "inline_ir", None)
APPLIED = (PATCHES and _NUMBA_INLINE_IR is not None and "__deepcopy__" not in vars(ir.Scope)
           and hasattr(ir.Scope(None, ir.Loc("", 0)).localvars, "_con"))
if APPLIED:
    ir.Scope.__deepcopy__ = _copy_scope
    inline_closurecall.InlineWorker.inline_ir = _inline_ir
