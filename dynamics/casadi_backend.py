"""`CasadiDynamics`: the automatic-differentiation baseline of the second-order paper (Sec. V-B).

RNEA and ABA are written once in CasADi ``SX`` (:mod:`dynamics.symbolic`) from the same
:class:`~dynamics.model.RobotModel` as the analytical kernels; every derivative comes from CasADi's
``jacobian`` / ``gradient`` / ``hessian``:

* first order: ``jacobian`` of tau (or a) w.r.t. the local perturbation ``delta``, v and a (or tau);
* full second-order tensors: ``jacobian`` of the vectorised first-order Jacobians w.r.t. the second
  perturbation ``eps``, v or a, giving ``T[i, j, k] = L_{x_k}(L_{x_j} f_i)``;
* the ``lam``-contracted form: reverse mode on ``lam . f`` (one gradient) then ``jacobian``, without
  the n^3 tensor.

With ``contacts`` (a list of :class:`~dynamics.contacts.Contact3D` / ``Contact6D``), ``aba`` is
the KKT contact dynamics of :mod:`dynamics.contacts` written in SX
(:func:`dynamics.symbolic.contact_dynamics`) and its derivatives the same AD of it: the AD
baseline of :class:`~dynamics.contact_dynamics.ContactDynamics`.  ``impulse_derivatives`` is the
impact map on the contacts (:func:`dynamics.symbolic.impulse_dynamics`) and its AD, and
``with_contacts`` the same backend on another contact set: what a problem of phases steps
through (:mod:`ddp.phases`; costs on the contact forces need the analytical backend).

Functions are built once per model, contact set and kind in a process (every backend on them
shares them: a study's instances of one problem build them once; the last
:data:`SHARED_FUNCTIONS` built are kept).  With ``codegen=True`` each one is
turned into C (``casadi.CodeGenerator``), compiled by the system C compiler (``cc -O3 -shared``)
into a shared library cached on disk under ``~/.cache/soddp/casadi`` (key: the model arrays, the
function kind, CasADi's version, the flags and the source that builds the expressions), and
loaded with
``casadi.external``.  :class:`CodegenLimits` bounds the expression size, the C size and the compile
time; exceeding one raises :class:`CodegenLimitError` naming the limit and the measured value.
Batches are evaluated with ``Function.map(T, "thread", n_threads)``, through CasADi's zero-copy
buffers bound to numpy arrays kept per kind and batch size (so one instance must not be called
from several threads at once).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path

import casadi as cs
import numpy as np

from .contact_dynamics import (ContactDerivatives, ContactSecondDerivatives, ImpulseDerivatives,
                               _damping, _restitution, check_order_0_to_2, holds, values_only)
from .contacts import ContactSet
from .inputs import prepare
from .protocol import RobotConfigurationSpace, _check_order, robot_model
from .results import FDDerivatives, IDDerivatives
from .symbolic import SymbolicTree, contact_dynamics, contact_specs, impulse_dynamics

#: kinds of function a CasadiDynamics builds, named after the quantity: the value (``rnea``,
#: ``aba``), its first derivatives (``_fo``), first and second derivatives (``_so``) and the
#: second derivatives contracted with a co-state lam (``_so_lam``); ``impulse``: the impact map
#: on the contacts (output (v+, impulse), inputs q, v and the restitution r); ``contact``: the
#: contact dynamics with its forces (output (a, lam), inputs q, v, tau);
#: name -> (dynamics, order, contracted)
KINDS = {
    "rnea": ("rnea", 0, False), "aba": ("aba", 0, False),
    "rnea_fo": ("rnea", 1, False), "rnea_so": ("rnea", 2, False), "rnea_so_lam": ("rnea", 2, True),
    "aba_fo": ("aba", 1, False), "aba_so": ("aba", 2, False), "aba_so_lam": ("aba", 2, True),
    "impulse": ("impulse", 0, False), "impulse_fo": ("impulse", 1, False),
    "impulse_so": ("impulse", 2, False),
    "contact": ("contact", 0, False), "contact_fo": ("contact", 1, False),
    "contact_so": ("contact", 2, False),
}


#: how many of the last SX functions built a process keeps for other backends on the same model,
#: contacts and kind (one of HyQ's second-order contact functions holds millions of instructions)
SHARED_FUNCTIONS = 16
_SHARED: OrderedDict = OrderedDict()  # (model name, _cache_key) -> (Function, BuildReport)

#: the models for which the one line saying that second-order functions are being built was
#: printed (once per model and process)
_BUILD_NOTICED = set()


class CodegenLimitError(RuntimeError):
    """Code generation exceeded a limit of :class:`CodegenLimits`."""


@dataclass
class CodegenLimits:
    """Limits of ``codegen=True`` (None = no limit).

    ``max_instructions``: CasADi ``n_instructions()`` of the function, checked before generating C;
    ``max_code_mb``: size of the generated C file, checked before compiling;
    ``max_compile_s``: wall time of the C compiler (the compiler is killed when exceeded).
    """

    max_instructions: int | None = 20_000_000
    max_code_mb: float | None = 500.0
    max_compile_s: float | None = 1800.0


@dataclass
class BuildReport:
    """What building one function cost: symbolic build time, expression size and, with codegen,
    generation and compile times and file sizes (of the first build if ``cached``: loaded from
    the disk cache, or built by another backend of this process)."""

    kind: str
    build_s: float
    n_instructions: int
    codegen_s: float | None = None
    compile_s: float | None = None
    c_bytes: int | None = None
    so_bytes: int | None = None
    cached: bool = False
    extra: dict = field(default_factory=dict)


def default_cache_dir() -> Path:
    return Path(os.environ.get("SODDP_CACHE", Path.home() / ".cache" / "soddp")) / "casadi"


class CasadiDynamics(RobotConfigurationSpace):
    """The :class:`~dynamics.protocol.Dynamics` protocol by CasADi automatic differentiation.

    ``codegen``: compile the functions to C (see module docstring); ``limits``: a
    :class:`CodegenLimits`; ``cflags``: compiler flags (default ``("-O3",)``); ``n_threads``:
    threads of batched evaluation; ``cache_dir``: where compiled libraries are kept.
    ``reports`` holds a :class:`BuildReport` per function built.
    """

    def __init__(self, model, codegen: bool = False, limits: CodegenLimits | None = None,
                 cflags=("-O3",), n_threads: int | None = None, cache_dir=None, contacts=None,
                 damping: float = 0.0):
        self.model = robot_model(model, "CasadiDynamics")
        #: the :class:`~dynamics.contacts.ContactSet` of the constrained dynamics (module
        #: docstring), or None (no contacts: free flight)
        self.contacts = None if not contacts else (
            contacts if isinstance(contacts, ContactSet) else ContactSet(model, contacts))
        self.damping = _damping(damping)
        self._specs = (None if self.contacts is None else
                       (contact_specs(model, self.contacts.contacts), self.damping))
        self.nq, self.nv = model.nq, model.nv
        self.codegen = bool(codegen)
        self.limits = limits or CodegenLimits()
        self.cflags = tuple(cflags)
        self.n_threads = n_threads or os.cpu_count() or 1
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self.reports: dict[str, BuildReport] = {}
        self._tree = None
        self._functions: dict[str, cs.Function] = {}
        self._buffers: dict[tuple, tuple] = {}

    def __repr__(self):
        held = "" if self.contacts is None else f", contacts={self.contacts!r}"
        return f"CasadiDynamics({self.model!r}, codegen={self.codegen}{held})"

    def with_contacts(self, contacts, damping: float = 0.0):
        """This backend (its codegen settings) on the contacts ``contacts`` (none: free
        flight) with ``damping``; itself when they are its own."""
        if holds(self, contacts, damping):
            return self
        return CasadiDynamics(self.model, self.codegen, self.limits, self.cflags,
                              self.n_threads, self.cache_dir, contacts, damping)

    # ------------------------------------------------------------------ dynamics
    def _no_inverse(self):
        if self.contacts is not None:
            raise NotImplementedError("CasadiDynamics with contacts: the contact forces are not "
                                      "determined by (q, v, a) alone; no inverse dynamics")

    def rnea(self, q, v, a):
        self._no_inverse()
        b = prepare(self.model, q=q, v=v, a=a)
        return b.unbatch(self._eval("rnea", b, "q", "v", "a")[0])

    def aba(self, q, v, tau):
        b = prepare(self.model, q=q, v=v, tau=tau)
        return b.unbatch(self._eval("aba", b, "q", "v", "tau")[0])

    def id_derivatives(self, q, v, a, order=1):
        _check_order(order)
        self._no_inverse()
        b = prepare(self.model, q=q, v=v, a=a)
        outs = self._eval("rnea_fo" if order == 1 else "rnea_so", b, "q", "v", "a")
        return IDDerivatives(*b.unbatch(tuple(outs)))

    def fd_derivatives(self, q, v, tau, order=1, lam=None):
        _check_order(order)
        if order == 1:
            if lam is not None:
                raise ValueError("lam: only used with order=2")
            b = prepare(self.model, q=q, v=v, tau=tau)
            outs = self._eval("aba_fo", b, "q", "v", "tau")
        elif lam is None:
            b = prepare(self.model, q=q, v=v, tau=tau)
            outs = self._eval("aba_so", b, "q", "v", "tau")
        else:
            b = prepare(self.model, q=q, v=v, tau=tau, lam=lam)
            outs = self._eval("aba_so_lam", b, "q", "v", "tau", "lam")
        return FDDerivatives(*b.unbatch(tuple(outs)))

    def impulse_derivatives(self, q, v, restitution: float = 0.0, order: int = 1):
        """The impact map on the contacts at one knot or a batch (v the velocity before it) as
        an :class:`~dynamics.contact_dynamics.ImpulseDerivatives`: ``order`` 0 the values
        v_plus and impulse, 1 their first derivatives, 2 the second-derivative tensors of
        (v+, impulse) too (``status`` is None: a singular system gives NaN)."""
        if self.contacts is None:
            raise ValueError("CasadiDynamics without contacts: an impact needs contacts "
                             "(with_contacts)")
        check_order_0_to_2(order)
        r = _restitution(restitution)
        b = prepare(self.model, sizes={"r": (1, "1")}, q=q, v=v,
                    r=np.full(np.shape(q)[:-1] + (1,), r))
        outs = self._eval(("impulse", "impulse_fo", "impulse_so")[order], b, "q", "v", "r")
        n = self.nv
        w, rest = outs[0], outs[1:]
        fields = [w[:, :n], w[:, n:]]
        if order >= 1:
            Jq, Jv = rest[0], rest[1]
            fields += [Jq[:, :n], Jv[:, :n], Jq[:, n:], Jv[:, n:], None]
        if order == 2:
            fields += [rest[2], rest[3]]
        return ImpulseDerivatives(*b.unbatch(tuple(fields)))

    def contact_derivatives(self, q, v, tau, order: int = 1):
        """The contact dynamics on the contacts with its forces at one knot or a batch, as a
        :class:`~dynamics.contact_dynamics.ContactDerivatives` (``order`` 0: a and lam; 1:
        their first derivatives) or, ``order`` 2, a
        :class:`~dynamics.contact_dynamics.ContactSecondDerivatives` with the tensors of
        (a, lam) (``status`` is None: a singular system gives NaN)."""
        if self.contacts is None:
            raise ValueError("CasadiDynamics without contacts: no contact forces "
                             "(with_contacts)")
        check_order_0_to_2(order)
        b = prepare(self.model, q=q, v=v, tau=tau)
        outs = self._eval(("contact", "contact_fo", "contact_so")[order], b, "q", "v", "tau")
        n = self.nv
        w = outs[0]
        if order == 0:
            return values_only(*b.unbatch((w[:, :n], w[:, n:])), None)
        firsts = [d for D in outs[1:4] for d in (D[:, :n], D[:, n:])]  # a's then lam's
        fields = [w[:, :n], w[:, n:], *firsts[0::2], *firsts[1::2], None]
        if order == 1:
            return ContactDerivatives(*b.unbatch(tuple(fields)))
        return ContactSecondDerivatives(*b.unbatch(tuple(fields + outs[4:])))

    # ------------------------------------------------------------------ functions
    def function(self, kind: str) -> cs.Function:
        """The CasADi Function of ``kind`` (one of :data:`KINDS`), built (and with codegen
        compiled) on first use.  Inputs (q, v, a|tau[, lam]); outputs column vectors, tensors
        vectorised column-major (see :func:`output_shapes`)."""
        if kind not in KINDS:
            raise ValueError(f"kind: expected one of {sorted(KINDS)}; got {kind!r}")
        if kind not in self._functions:
            if self.codegen:
                self._functions[kind] = self._compiled(kind)
            else:
                self._functions[kind] = self._symbolic(kind)
        return self._functions[kind]

    def output_shapes(self, kind: str):
        n = self.nv
        dyn, order, contracted = KINDS[kind]
        w = n + self.contacts.size if dyn in ("impulse", "contact") else n  # output rows
        if dyn == "impulse":
            return [(w,), (w, n), (w, n), (w, n, n), (w, n, n)][:(1, 3, 5)[order]]
        shapes = [(w,)]
        if order >= 1:
            shapes += [(w, n)] * 3
        if order == 2:
            shapes += [(n, n) if contracted else (w, n, n)] * 4
        return shapes

    def _symbolic(self, kind: str) -> cs.Function:
        key = (self.model.name, self._cache_key(kind))
        if key in _SHARED:
            _SHARED.move_to_end(key)
            f, report = _SHARED[key]
            self.reports[kind] = replace(report, cached=True)
            return f
        if KINDS[kind][1] == 2 and self.model.name not in _BUILD_NOTICED:
            _BUILD_NOTICED.add(self.model.name)
            print(f"building CasADi's second-derivative functions of {self.model.name} on first "
                  f"use (once per kind and contact set in a process; HyQ on four feet: about "
                  f"4 s each)", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        f = build_function(self._symbolic_tree(), kind, contacts=self._specs)
        self.reports[kind] = BuildReport(kind, time.perf_counter() - t0, n_instructions(f))
        _SHARED[key] = (f, self.reports[kind])
        while len(_SHARED) > SHARED_FUNCTIONS:
            _SHARED.popitem(last=False)
        return f

    def _symbolic_tree(self):
        if self._tree is None:
            self._tree = SymbolicTree(self.model)
        return self._tree

    def _eval(self, kind, b, *names):
        """``kind`` at the b.T points of the batch ``b`` (its arrays ``names``): one call of the
        function (b.T = 1) or of its ``map`` over the knots, through CasADi's zero-copy buffers:
        inputs and outputs are numpy arrays that CasADi reads and writes in place (converting
        the ``DM`` results of a call instead took as long as evaluating them: ATLAS's FD-SO
        tensors at 40 knots, 0.4-0.6 s a call beside 0.8 s of evaluation)."""
        ins, outs, evaluate = self._buffers_of(kind, b.T)
        for dst, k in zip(ins, names):
            dst[:] = b[k]
        evaluate()
        # out (T, size) holds point t's column-major vector in row t; _unvec copies it out of
        # the buffer, which the next call overwrites
        return [_unvec(out.T, shape)
                for out, shape in zip(outs, self.output_shapes(kind))]

    def _buffers_of(self, kind, T):
        """(inputs, outputs, evaluate) of ``kind`` at T points: inputs[i] (T, numel of input i)
        and outputs[i] (T, numel of output i), bound to the buffers of the function (T = 1) or
        of its ``map(T, "thread", n_threads)``; ``evaluate()`` fills the outputs."""
        key = (kind, T)
        if key not in self._buffers:
            f = self.function(kind)
            if T > 1:
                f = f.map(T, "thread", self.n_threads)
            buf, evaluate = f.buffer()
            ins = [np.zeros((T, f.numel_in(i) // T)) for i in range(f.n_in())]
            outs = [np.zeros((T, f.numel_out(i) // T)) for i in range(f.n_out())]
            for i, x in enumerate(ins):
                buf.set_arg(i, memoryview(x))
            for i, x in enumerate(outs):
                buf.set_res(i, memoryview(x))
            self._buffers[key] = (ins, outs, evaluate, buf)  # buf keeps the bindings
        return self._buffers[key][:3]

    # ------------------------------------------------------------------ code generation
    def _cache_key(self, kind: str) -> str:
        h = hashlib.sha256()
        for x in self.model.kernel_args:
            h.update(np.ascontiguousarray(x).tobytes())
        h.update(f"{kind}|{cs.__version__}|{' '.join(self.cflags)}".encode())
        # what generates the expressions: the symbolic dynamics, the Lie group helpers it uses
        # and build_function (editing anything else here keeps the compiled libraries)
        for src in ("symbolic.py", "lie.py"):
            h.update(Path(__file__).with_name(src).read_bytes())
        h.update(inspect.getsource(build_function).encode())
        h.update(repr(self._specs).encode())  # the contacts, if any
        return h.hexdigest()[:20]

    def _compiled(self, kind: str) -> cs.Function:
        name = f"soddp_{kind}"
        d = self.cache_dir / f"{self.model.name}-{self._cache_key(kind)}"
        so = d / f"{name}.so"
        meta = d / "build.json"
        if so.is_file() and meta.is_file():
            rep = BuildReport(**json.loads(meta.read_text()))
            rep.cached = True
            self.reports[kind] = rep
            return cs.external(name, str(so))
        lim = self.limits
        failed = d / "failed.json"
        if failed.is_file():  # an earlier build hit a limit at least as generous as this one
            rec = json.loads(failed.read_text())
            if lim.max_compile_s is not None and rec["max_compile_s"] >= lim.max_compile_s:
                raise CodegenLimitError(f"{rec['message']} [recorded earlier in {failed}; "
                                        "delete it or raise the limit to retry]")
        t0 = time.perf_counter()
        f = build_function(self._symbolic_tree(), kind, name=name, contacts=self._specs)
        build_s = time.perf_counter() - t0
        n_ins = n_instructions(f)
        if lim.max_instructions is not None and n_ins > lim.max_instructions:
            raise CodegenLimitError(
                f"codegen of {kind!r} for {self.model.name}: the expression has {n_ins:,} "
                f"instructions, above limits.max_instructions = {lim.max_instructions:,} "
                f"(symbolic build took {build_s:.1f} s); raise the limit or use codegen=False")
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="build-", dir=self.cache_dir))
        try:
            t0 = time.perf_counter()
            cg = cs.CodeGenerator(f"{name}.c", {"with_header": False})
            cg.add(f)
            cg.generate(str(tmp) + os.sep)
            codegen_s = time.perf_counter() - t0
            c_file = tmp / f"{name}.c"
            c_bytes = c_file.stat().st_size
            if lim.max_code_mb is not None and c_bytes > lim.max_code_mb * 1e6:
                raise CodegenLimitError(
                    f"codegen of {kind!r} for {self.model.name}: the C file is "
                    f"{c_bytes / 1e6:.1f} MB, above limits.max_code_mb = {lim.max_code_mb} MB")
            cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
            if cc is None:
                raise RuntimeError("codegen=True needs a C compiler (cc or gcc, or set CC)")
            so_tmp = tmp / f"{name}.so"
            t0 = time.perf_counter()
            # own process group: on timeout the compiler proper (cc1, a grandchild) dies too
            proc = subprocess.Popen([cc, *self.cflags, "-shared", "-fPIC", "-o", str(so_tmp),
                                     str(c_file), "-lm"], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, start_new_session=True)
            try:
                _, stderr = proc.communicate(timeout=lim.max_compile_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                msg = (f"codegen of {kind!r} for {self.model.name}: compiling {c_bytes / 1e6:.1f} "
                       f"MB of C with {cc} {' '.join(self.cflags)} exceeded limits.max_compile_s "
                       f"= {lim.max_compile_s} s (compiler stopped)")
                d.mkdir(parents=True, exist_ok=True)
                failed.write_text(json.dumps(dict(message=msg, max_compile_s=lim.max_compile_s)))
                raise CodegenLimitError(msg) from None
            except BaseException:  # Ctrl-C: the compiler is not in our process group, and
                os.killpg(proc.pid, signal.SIGKILL)  # would compile on (minutes, GBs) alone
                proc.wait()
                raise
            compile_s = time.perf_counter() - t0
            if proc.returncode != 0:
                raise RuntimeError(f"compiling {c_file} failed:\n{stderr[-2000:]}")
            rep = BuildReport(kind, build_s, n_ins, codegen_s, compile_s, c_bytes,
                              so_tmp.stat().st_size)
            d.mkdir(parents=True, exist_ok=True)
            shutil.copy(so_tmp, so)
            meta.write_text(json.dumps(rep.__dict__))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.reports[kind] = rep
        return cs.external(name, str(so))


def _unvec(col: np.ndarray, shape) -> np.ndarray:
    """(size, T) column-major vectorised outputs -> a new array (T, *shape), never a view of
    ``col``."""
    T = col.shape[1]
    out = np.ascontiguousarray(
        col.T.reshape(T, *shape[::-1]).transpose(0, *range(len(shape), 0, -1)))
    return out.copy() if np.may_share_memory(out, col) else out


def build_function(tree: SymbolicTree, kind: str, name: str | None = None,
                   contacts=None) -> cs.Function:
    """The CasADi Function of ``kind`` (see :data:`KINDS`) for a :class:`SymbolicTree`;
    ``contacts``: (the specs of :func:`dynamics.symbolic.contact_specs`, the damping) for the
    contact dynamics in place of ABA (their drift needs one more perturbation, evaluated at 0)
    and for the impact map (kind ``impulse``: output (v+, impulse), derivatives in q and v);
    kind ``contact``: the contact dynamics with its forces, output (a, lam).

    The expressions hold the perturbations ``eps``, ``delta`` (:mod:`dynamics.symbolic`); they
    are inputs of an SX function that an MX wrapper evaluates at 0.  Substituting 0 into the
    expressions instead took half of the build and shortened them by nothing (ATLAS ``aba_so``:
    10 s against 5 s, 7,982,590 instructions either way, the same values bit for bit)."""
    dyn, order, contracted = KINDS[kind]
    impulse = dyn == "impulse"
    if dyn in ("impulse", "contact") and contacts is None:
        raise ValueError(f"kind: {kind!r} needs contacts")
    n, nq = tree.model.nv, tree.model.nq
    x_name = {"rnea": "a", "aba": "tau", "contact": "tau", "impulse": "r"}[dyn]
    q, v, x = cs.SX.sym("q", nq), cs.SX.sym("v", n), cs.SX.sym(x_name, 1 if impulse else n)
    eps, delta = cs.SX.sym("eps", n), cs.SX.sym("delta", n)
    drift = cs.SX.sym("drift", n)
    inputs = [q, v, x]
    held = contacts is not None and dyn in ("aba", "contact")
    X = tree.placements(q, eps if order == 2 else None, delta if order >= 1 else None,
                        more=(drift,) if held else ())
    if impulse:
        f = cs.vertcat(*impulse_dynamics(tree, X, v, contacts[0], x, contacts[1]))
    elif held:
        a, lam = contact_dynamics(tree, X, drift, v, x, contacts[0], damping=contacts[1])
        f = cs.vertcat(a, lam) if dyn == "contact" else a
    else:
        f = tree.rnea(X, v, x) if dyn == "rnea" else tree.aba(X, v, x)
    outs = [f]
    if order >= 1:
        Jq, Jv = cs.jacobian(f, delta), cs.jacobian(f, v)
        outs += [cs.vec(Jq), cs.vec(Jv)]
        if not impulse:
            Jx = cs.jacobian(f, x)
            outs.append(cs.vec(Jx))
    if order == 2 and impulse:  # (q, q) and (q, v); (v, v) vanishes (linear in v)
        outs += [cs.vec(cs.jacobian(cs.vec(Jq), eps)), cs.vec(cs.jacobian(cs.vec(Jq), v))]
    elif order == 2 and not contracted:
        outs += [cs.vec(cs.jacobian(cs.vec(Jq), eps)), cs.vec(cs.jacobian(cs.vec(Jv), v)),
                 cs.vec(cs.jacobian(cs.vec(Jq), v)), cs.vec(cs.jacobian(cs.vec(Jx), eps))]
    elif order == 2:
        lam = cs.SX.sym("lam", n)
        inputs.append(lam)
        s = cs.dot(lam, f)
        g_delta, g_x = cs.gradient(s, delta), cs.gradient(s, x)
        outs += [cs.vec(cs.jacobian(g_delta, eps)), cs.vec(cs.hessian(s, v)[0]),
                 cs.vec(cs.jacobian(g_delta, v)), cs.vec(cs.jacobian(g_x, eps))]
    outs = [cs.densify(o) for o in outs]  # dense outputs: buffers hold every entry
    in_names = ["q", "v", x_name, "lam"][:len(inputs)]
    out_names = [f"out{i}" for i in range(len(outs))]
    name = name or f"soddp_{kind}"
    pert = [(p, nm) for p, nm, used in ((eps, "eps", order == 2), (delta, "delta", order >= 1),
                                        (drift, "drift", held)) if used]
    if not pert:
        return cs.Function(name, inputs, outs, in_names, out_names)
    core = cs.Function(f"{name}_at", inputs + [p for p, _ in pert], outs,
                       in_names + [nm for _, nm in pert], out_names)
    sym = [cs.MX.sym(nm, *x.shape) for nm, x in zip(in_names, inputs)]
    res = core(*sym, *[cs.DM.zeros(n)] * len(pert))
    return cs.Function(name, sym, list(res) if isinstance(res, (list, tuple)) else [res],
                       in_names, out_names)


def n_instructions(f: cs.Function) -> int:
    """The SX instructions of a Function of :func:`build_function` (of the SX function that its
    MX wrapper calls, if it has one)."""
    if f.is_a("SXFunction"):
        return f.n_instructions()
    return sum(g.n_instructions() for g in f.find_functions() if g.is_a("SXFunction"))
