"""The solver's passes over the knots, compiled: rollout (open or closed loop), the Riccati
backward pass of DDP / iLQR (Cholesky, or the box-QP of Tassa, Mansard, Todorov 2014 when controls
are bounded) with the exact second-order dynamics terms, and the adjoint gradient.  Their
arguments are the records of :mod:`.records`.

Shapes: T knots, n = nv, ndx = 2 n, nu controls.  A state x = (q, v) (nq + nv), its tangent
dx = (dq, dv).  The discrete step, its Jacobians and its second-order terms are those of
:mod:`dynamics.kernels.step` (semi-implicit Euler).

Second-order dynamics terms (DDP), contracted with the co-state lam = V'_x (tangent at x+):
``mu = lam_v + dt J_w^T lam_q`` weights the FD-SO terms (Lq, Lv, Lqv, Lt: ``sum_i mu_i`` of
d2a_dq2, d2a_dv2, d2a_dqdv, d2a_dtaudq) and, on Lie-group joints, ``lam_q`` weights the Hessian of
``(q (+) dq) (+) (w + dw)``.  :class:`~.records.SecondOrderMode` says where the FD-SO terms come
from: NONE (iLQR), TENSORS (full tensors of every knot, any backend through the Dynamics
protocol, contracted here; at an impact those of v+; with costs on the contact forces, the
forces' rows after them, weighted by the cost's gradient dl/dlam),
CONTRACTED (the contracted IDSVA-SO sweep called at each knot, chained through the knot's
first-order FDSVA from the derivative phase: the analytical backend; O(n d) pairs of DoFs and a
few n^3 products per knot).

A knot of the backward pass is a sequence of named steps, as in Crocoddyl's
``computeActionValueFunction`` / ``computeGains`` / ``computeValueFunction``: form Q
(:func:`_form_q`), add DDP's second-order terms (:func:`_add_second_order_terms`), regularize
(:func:`_regularized`), the gains (:func:`_gains`), the expected decrease, and the value update
(:func:`_schur_value_update` or :func:`_general_value_update`, then :func:`_value_update`).
"""

from collections import namedtuple

import numpy as np

from dynamics.jit import borrowed, call_linked, copy_into, keep_alive, njit
from dynamics.kernels.dense import (back_substitution, cholesky, cholesky_solve,
                                    forward_substitution, gemm_nt, gemm_tn)
from dynamics.kernels.forward import aba_sweeps
from dynamics.kernels.inverse import kinematics_and_inertias
from dynamics.kernels.kinematics import difference_point, integrate_point
from dynamics.kernels.packed_model import unpack
from dynamics.kernels.step import (acceleration_weights, add_impact_hessian, add_step_hessian,
                                   euler_step, step_quadratic)

from .contact_knots import STEP_NOT_FINITE, STEPPED, force_cost_weight
from .records import (IMPACT, LINKED_FREE_SECOND_ORDER, LINKED_SECOND_ORDER, LINKED_STEP, Forces,
                      SecondOrder, SecondOrderMode, StepDerivatives)

_JIT = dict(cache=True, error_model="numpy")

#: statuses of the backward pass
OK, NOT_POSITIVE_DEFINITE = 0, 1
#: what the passes and the costs raise at a kernel whose slot Python did not link (a bug)
NOT_LINKED_MESSAGE = ("a knot reached a kernel that is not linked for its argument types "
                      "(ddp.kernels.contact_knots.link, ddp.kernels.linked.link, "
                      "ddp.kernels.costs.link_costs) or that raised")


@njit(callee=True, forceinline=True, **_JIT)
def call_knot_kernel(slot, args):
    """The status that the knots' kernel linked in ``slot`` returns for ``args``
    (:func:`dynamics.jit.call_linked`); RuntimeError if none is linked for their
    types, or if it raised."""
    status = call_linked(slot, args)
    if status < 0:
        raise RuntimeError(NOT_LINKED_MESSAGE)
    return status


# ---------------------------------------------------------------------------------- rollout
@njit(**_JIT)
def rollout(model, step, x0, loop, box, gaps, xs, us_out, kin, lam):
    """States xs (T + 1, nx) from x0 under the controls of ``loop`` (:data:`~.records.ClosedLoop`:
    ``u_t = clip(us_t + alpha k_t + K_t (x_t (-) xs_ref_t), box.lower, box.upper)``; without
    ``loop.feedback`` u_t = clip(us_t)), written to us_out.  With ``gaps.open`` (multiple
    shooting, Mastalli et al. 2020) each state keeps the fraction 1 - alpha of its gap f_t
    (``gaps.f`` (T + 1, ndx)): x_0 = x0 (+) (alpha - 1) f_0,
    x_{t+1} = F(x_t, u_t) (+) (alpha - 1) f_{t+1}.  A non-finite step gives NaN states and
    controls from there on.  Returns the number of finite steps taken.

    ``kin``: (oR (T, nj, 3, 3), op (T, nj, 3), S0 (T, nv, 6)) to keep the forward kinematics
    of each knot's dynamics (for its costs: :func:`~ddp.kernels.costs.cost_knots`), or empty
    arrays.  The knots of ``step.contacts`` with contacts step the KKT contact dynamics, the
    impacts map v to v+ (their forces and impulses into ``lam`` (T, nc)); a singular KKT system
    stops the rollout as a non-finite step does (:func:`~.contact_knots.contact_step`, linked).
    """
    m = unpack(model.ints, model.floats)
    contacts = step.contacts
    nj = model.ints[0]
    n = model.ints[1]
    nq = x0.shape[0] - n
    dt, alpha, feedback = step.dt, loop.alpha, loop.feedback
    T, nu = loop.us.shape
    # arguments and work arrays as borrowed views (no reference counting in the knot loop)
    B, x0, us, k, K, xs_ref = borrowed((step.B, x0, loop.us, loop.k, loop.K, loop.xs_ref))
    lo, hi, f, xs, us_out = borrowed((box.lower, box.upper, gaps.f, xs, us_out))
    KR, Kp, KS = borrowed(kin)
    keep = KR.shape[0] > 0
    work = (np.empty((n, 6)), np.empty((nj, 6, 6)), np.empty((n, 6)), np.empty((n, 6)),
            np.empty((nj, 3, 3)), np.empty((nj, 3)), np.empty(n), np.empty(n), np.empty(n),
            np.empty(2 * n))
    S0, I0, U, Dinv, oR, op, tau, acc, w, dx = borrowed(work)
    copy_into(xs[0], x0)
    if gaps.open:
        _shift_by_gap(m, xs[0], f[0], alpha - 1.0, nq, n, w)
    for t in range(T):
        q = xs[t, :nq]
        v = xs[t, nq:]
        if feedback:
            difference_point(m, xs_ref[t, :nq], q, dx[:n])
            for r in range(n):
                dx[n + r] = v[r] - xs_ref[t, nq + r]
        for c in range(nu):
            uc = us[t, c]
            if feedback:
                uc += alpha * k[t, c]
                for r in range(2 * n):
                    uc += K[t, c, r] * dx[r]
            us_out[t, c] = min(max(uc, lo[c]), hi[c])
        for r in range(n):
            s = 0.0
            for c in range(nu):
                s += B[r, c] * us_out[t, c]
            tau[r] = s
        # ABA (aba_point's body, inlined here: a call takes a reference to each of its arrays,
        # the model's 16 among them), its kinematics kept with ``kin``
        oRt, opt, S0t = oR, op, S0
        if keep:
            oRt, opt, S0t = KR[t], Kp[t], KS[t]
        if contacts.kind[t] == IMPACT or contacts.size[t] > 0:
            stepped = call_knot_kernel(LINKED_STEP, (model, step, t, q, v, tau, acc, lam[t], S0t,
                                                     oRt, opt, xs[t + 1, :nq], xs[t + 1, nq:],
                                                     w))
            ok = stepped == STEPPED
        else:
            kinematics_and_inertias(m, q, oRt, opt, S0t, I0)
            aba_sweeps(m, v, tau, acc, S0t, I0, U, Dinv)
            ok = euler_step(m, q, v, acc, dt, xs[t + 1, :nq], xs[t + 1, nq:], w)
        if not ok:
            xs[t + 1:] = np.nan
            us_out[t + 1:] = np.nan
            keep_alive(work)
            return t
        if gaps.open:
            _shift_by_gap(m, xs[t + 1], f[t + 1], alpha - 1.0, nq, n, w)
    keep_alive(work)
    return T


@njit(**_JIT)
def knot_steps(model, step, first, xs, us, next_xs, lam, status):
    """F(xs_t, us_t) of knots first, first + 1, ... independently (rows t of xs (T, nx) and us
    (T, nu): knot first + t) into next_xs (T, nx), with the knots' contact dynamics or impacts
    (their forces into lam (T, nc)); NaN where a step fails (the gaps of multiple shooting, the
    forces of given states); each knot's status into status (T,), as
    :func:`~.contact_knots.contact_step` returns it (:data:`~.contact_knots.STEPPED`,
    ``STEP_NOT_FINITE`` or a singular KKT system's)."""
    m = unpack(model.ints, model.floats)
    contacts = step.contacts
    nj, n = model.ints[0], model.ints[1]
    nq = xs.shape[1] - n
    T, nu = us.shape
    S0, I0, U, Dinv = np.empty((n, 6)), np.empty((nj, 6, 6)), np.empty((n, 6)), np.empty((n, 6))
    oR, op = np.empty((nj, 3, 3)), np.empty((nj, 3))
    tau, acc, w = np.empty(n), np.empty(n), np.empty(n)
    for t in range(T):
        knot = first + t
        q, v = xs[t, :nq], xs[t, nq:]
        for r in range(n):
            s = 0.0
            for c in range(nu):
                s += step.B[r, c] * us[t, c]
            tau[r] = s
        if contacts.kind[knot] == IMPACT or contacts.size[knot] > 0:
            status[t] = call_knot_kernel(LINKED_STEP, (model, step, knot, q, v, tau, acc, lam[t],
                                                       S0, oR, op, next_xs[t, :nq],
                                                       next_xs[t, nq:], w))
        else:
            kinematics_and_inertias(m, q, oR, op, S0, I0)
            aba_sweeps(m, v, tau, acc, S0, I0, U, Dinv)
            status[t] = (STEPPED if euler_step(m, q, v, acc, step.dt, next_xs[t, :nq],
                                               next_xs[t, nq:], w) else STEP_NOT_FINITE)
        if status[t] != STEPPED:
            next_xs[t] = np.nan


@njit(callee=True, **_JIT)
def _shift_by_gap(m, x, gap, scale, nq, n, w):
    """x <- x (+) scale * gap, in place (w: an n-vector of workspace)."""
    for r in range(n):
        w[r] = scale * gap[r]
    q = x[:nq].copy()
    integrate_point(m, q, w, x[:nq])
    for r in range(n):
        x[nq + r] += scale * gap[n + r]


# ---------------------------------------------------------------------------------- linear algebra
@njit(callee=True, **_JIT)
def _quadratic(H, g, x):
    """1/2 x^T H x + g^T x."""
    f = 0.0
    for i in range(x.shape[0]):
        s = 0.0
        for j in range(x.shape[0]):
            s += H[i, j] * x[j]
        f += x[i] * (0.5 * s + g[i])
    return f


@njit(**_JIT)
def box_qp(H, g, lower, upper, x0, max_iter, x, free, L):
    """Minimize 1/2 x^T H x + g^T x subject to lower <= x <= upper by projected Newton (Tassa,
    Mansard, Todorov 2014), from x0.  Writes x, the free set and the Cholesky factor of H on the
    free set (in the leading nf x nf block of L); returns (status, nf) with status 0 on success,
    1 when H is not positive definite on the free set."""
    n = g.shape[0]
    for i in range(n):
        x[i] = min(max(x0[i], lower[i]), upper[i])
    grad = np.empty(n)
    dx = np.empty(n)
    xn = np.empty(n)
    idx = np.empty(n, dtype=np.int64)
    nf = 0
    for _ in range(max_iter):
        nf = 0
        for i in range(n):
            s = g[i]
            for j in range(n):
                s += H[i, j] * x[j]
            grad[i] = s
            clamped = (x[i] <= lower[i] and s > 0.0) or (x[i] >= upper[i] and s < 0.0)
            free[i] = not clamped
            if not clamped:
                idx[nf] = i
                nf += 1
        if nf == 0:
            return 0, 0
        Hf = np.empty((nf, nf))
        gf = np.empty((nf, 1))
        for a in range(nf):
            gf[a, 0] = grad[idx[a]]
            for b in range(nf):
                Hf[a, b] = H[idx[a], idx[b]]
        Lf = L[:nf, :nf]
        if not cholesky(Hf, Lf):
            return 1, nf
        sol = np.empty((nf, 1))
        cholesky_solve(Lf, gf, sol)
        dx[:] = 0.0
        big = 0.0
        for a in range(nf):
            dx[idx[a]] = sol[a, 0]
            big = max(big, abs(sol[a, 0]))
        if big < 1e-12:
            break
        f0 = _quadratic(H, g, x)
        step = 1.0
        while step > 1e-10:
            lin = 0.0
            for i in range(n):
                xn[i] = min(max(x[i] + step * dx[i], lower[i]), upper[i])
                lin += grad[i] * (xn[i] - x[i])
            if _quadratic(H, g, xn) - f0 <= 0.1 * lin:
                break
            step *= 0.5
        moved = 0.0
        for i in range(n):
            moved = max(moved, abs(xn[i] - x[i]))
            x[i] = xn[i]
        if moved < 1e-12:
            break
    return 0, nf


# ---------------------------------------------------------------------------------- backward
#: from this many DoFs on, the backward pass forms F^T V F from the step's structure
#: (:func:`~dynamics.kernels.step.step_quadratic`: 2.5x fewer flops; measured with a free-flyer
#: block, per knot: nv = 36, nu = 30 (ATLAS) 54 -> 36 us, nv = 50 129 -> 79 us, nv = 24
#: 17.4 -> 16.0 us, but nv = 18 (HyQ) 7.2 -> 9.9 us: below BLAS sizes its extra passes cost more
#: than it saves)
STRUCTURED_MIN_NV = 24

#: from this size on, products go to BLAS (single call per product, outside any parallel region);
#: below, our loops (a BLAS call costs about a microsecond of overhead)
BLAS_MIN = 24


@njit(callee=True, **_JIT)
def _mmt(A, B, out):
    """out = A @ B.T."""
    if A.shape[1] >= BLAS_MIN:
        np.dot(A, B.T, out)
    else:
        gemm_nt(A, B, out)


@njit(callee=True, **_JIT)
def _mtm(A, B, out):
    """out = A.T @ B."""
    if A.shape[1] >= BLAS_MIN:
        np.dot(A.T, B, out)
    else:
        gemm_tn(A, B, out, 1.0, 0.0)


#: the work arrays of one backward pass (:func:`_backward_workspace`): the value function (Vx,
#: Vxx), Q and its Gauss-Newton copy, the products forming F^T V F (dense: FT, VFT, Qzz; from
#: the step's structure: Pw, Sw, Ww, Hxw, Huw, Rw), the regularized Q_uu / Q_ux and their
#: Cholesky factor L, the gains of the knot (kt, Kt) and the value update's products
BackwardWork = namedtuple(
    "BackwardWork",
    "Vx Vxx Qxx_gn Qux_gn Quu_gn F FT VFT Qzz Qz Quu Qux Qxx Quu_r Qux_r L kt Kt KT ZT KZ x lo_t "
    "hi_t VFr Qzr Pw Sw Ww Hxw Huw Rw Wn Zw free")


@njit(callee=True, **_JIT)
def _backward_workspace(n, nu, structured):
    ndx = 2 * n
    nz = ndx + nu
    ms = n if structured else 0  # work arrays of step_quadratic
    return BackwardWork(
        np.empty(ndx), np.empty((ndx, ndx)),
        np.empty((ndx, ndx)), np.empty((nu, ndx)), np.empty((nu, nu)),
        np.empty((ndx, nz)), np.empty((nz, ndx)), np.empty((nz, ndx)),
        np.empty((nz, nz)), np.empty(nz),
        np.empty((nu, nu)), np.empty((nu, ndx)), np.empty((ndx, ndx)),
        np.empty((nu, nu)), np.empty((nu, ndx)), np.zeros((nu, nu)),
        np.empty((nu, 1)), np.empty((nu, ndx)), np.empty((ndx, nu)),
        np.empty((ndx, nu)), np.empty((ndx, ndx)),
        np.empty(nu), np.empty(nu), np.empty(nu),
        np.empty((ndx, nz)), np.empty((nu, nz)),
        np.empty((ms, ms)), np.empty((ms, ms)), np.empty((ms, ms)),
        np.empty((ms, ndx)), np.empty((ms, nu)), np.empty((ms, ndx)),
        np.empty((nu, ndx)), np.empty((2 * nu, ndx)), np.empty(nu, dtype=np.bool_))


@njit(**_JIT)
def backward_pass(model, step, derivatives, second_order, costs, regularization, box, gaps,
                  gains, structured):
    """The Riccati backward pass (see module docstring) over the records of :mod:`.records`.

    ``regularization``: ``u`` is added to Q_uu; ``x`` to V'_xx inside Q_uu and Q_ux only
    (Tassa, Erez, Todorov 2012); ``v`` to the diagonal of every V_xx (Crocoddyl).  With
    ``safeguard``, at a knot where Q_uu with the exact second-order dynamics terms is not
    positive definite, those terms are dropped at that knot (Gauss-Newton there);
    ``gains.gauss_newton_knots[0]`` counts such knots.  ``structured``: F^T V_xx F by
    :func:`~dynamics.kernels.step.step_quadratic` (from Jq, Jw and the v+ rows of F; for
    nv >= ``STRUCTURED_MIN_NV``), else two dense products on the assembled F.  With ``gaps.open``
    the defects ``gaps.f`` (T + 1, ndx), f_t = F(x_{t-1}, u_{t-1}) (-) x_t (f_0 = x0 (-) x_0), of
    multiple shooting enter: the value gradient at each knot becomes V_x + V_xx f (Mastalli et
    al. 2020).  ``box``: the control bounds about the controls ``box.us`` (box-QP when
    ``box.bounded``).

    Writes the :data:`~.records.Gains`: k (T, nu), K (T, nu, ndx), dV = (sum k.Qu,
    1/2 sum k.Quu.k), the value gradients Vx (T + 1, ndx) and fVxx[t] = V_xx,t f_t (T + 1, ndx).
    Returns (status, knot): status OK, or NOT_POSITIVE_DEFINITE at that knot."""
    T, ndx, nu = derivatives.Fu.shape
    n = ndx // 2
    exact = second_order.mode != SecondOrderMode.NONE
    safeguard = regularization.safeguard
    # arguments and work arrays as borrowed views (no reference counting in the knot loop)
    d = _borrowed_derivatives(derivatives)
    so = _borrowed_second_order(second_order)
    run, term = borrowed(costs.running), borrowed(costs.terminal)
    lie_offsets, lie_sizes, us, lo, hi, f = borrowed((step.lie_offsets, step.lie_sizes, box.us,
                                                      box.lower, box.upper, gaps.f))
    k, K, dV, Vx_all, fVxx, info = borrowed(gains)
    work = _backward_workspace(n, nu, structured)
    w = borrowed(work)
    Vx, Vxx = w.Vx, w.Vxx
    copy_into(Vx, term.lx[0])
    copy_into(Vxx, term.lxx[0])
    info[0] = 0
    _value_update(Vx, Vxx, regularization.v, f[T], gaps.open, Vx_all[T], fVxx[T])
    dV[0] = 0.0
    dV[1] = 0.0
    # the value update in Schur form when the gains solve the unclamped Q_uu with reg_x = 0;
    # otherwise the general form of Tassa et al. (2012, eq. 11)
    schur = not box.bounded and regularization.x == 0.0
    contacts = step.contacts
    for t in range(T - 1, -1, -1):
        impact = contacts.kind[t] == IMPACT
        _form_q(t, d, run, 0.0 if impact else step.dt, lie_offsets, lie_sizes, Vx, Vxx,
                structured, regularization.x > 0.0, w)
        if impact:  # no control: Q_u = 0, Q_ux = 0 (Fu = 0, l_u = 0); Q_uu = I gives k = K = 0
            for c in range(nu):
                for e in range(nu):
                    w.Quu[c, e] = 1.0 if c == e else 0.0
        if exact:
            if safeguard:
                copy_into(w.Qxx_gn, w.Qxx)
                copy_into(w.Qux_gn, w.Qux)
                copy_into(w.Quu_gn, w.Quu)
            _add_second_order_terms(t, model, step, d, so, Vx, w.Qxx, w.Qux, w.Quu)
        _regularized(w.Quu, w.Qux, w.F, d.Fu[t], regularization.u, regularization.x, w.VFr,
                     w.Qzr, w.Quu_r, w.Qux_r)
        factored = False  # whether L holds the Cholesky factor of Quu_r
        if exact and safeguard:
            factored = cholesky(w.Quu_r, w.L)
            if not factored:  # the exact terms make Q_uu indefinite: Gauss-Newton at this knot
                info[0] += 1
                copy_into(w.Qxx, w.Qxx_gn)
                copy_into(w.Qux, w.Qux_gn)
                copy_into(w.Quu, w.Quu_gn)
                _regularized(w.Quu, w.Qux, w.F, d.Fu[t], regularization.u, regularization.x,
                             w.VFr, w.Qzr, w.Quu_r, w.Qux_r)
        Qu = w.Qz[ndx:]
        if not _gains(t, Qu, us, lo, hi, box.bounded, box.iterations, factored, schur, k, K, w):
            keep_alive(work)
            return NOT_POSITIVE_DEFINITE, t
        _expected_decrease(w.Quu, Qu, k[t], w.x, dV)
        if schur:
            _schur_value_update(w.Qz, w.Qxx, w.Qux, k[t], K[t], w.Wn, regularization.u, w.Zw,
                                w.KZ, Vx, Vxx)
        else:
            _general_value_update(w.Qz, w.Qxx, w.Quu, w.Qux, k[t], K[t], w.x, w.KT, w.ZT, w.KZ,
                                  Vx, Vxx)
        _value_update(Vx, Vxx, regularization.v, f[t], gaps.open, Vx_all[t], fVxx[t])
    keep_alive(work)
    return OK, -1


@njit(inline="always", **_JIT)
def _borrowed_derivatives(d):
    """The record ``d`` (:data:`~.records.StepDerivatives`) with its arrays borrowed."""
    Fx, Fu, da_dq, da_dv, da_du, Jq, Jw = borrowed((d.Fx, d.Fu, d.da_dq, d.da_dv, d.da_du, d.Jq,
                                                    d.Jw))
    lam, dlq, dlv, dlt, dlu, dl_dlam, status = borrowed(d.forces)
    return StepDerivatives(Fx, Fu, da_dq, da_dv, da_du, Jq, Jw,
                           Forces(lam, dlq, dlv, dlt, dlu, dl_dlam, status))


@njit(inline="always", **_JIT)
def _borrowed_second_order(so):
    """The record ``so`` with its arrays borrowed (its scalars as they are)."""
    return SecondOrder(so.mode, so.inner, so.outer, borrowed(so.tensors), borrowed(so.q),
                       borrowed(so.v), borrowed(so.a), borrowed(so.da_dtau), borrowed(so.lie_H),
                       borrowed(so.kkt))


@njit(inline="always", **_JIT)
def _form_q(t, d, run, dt, lie_offsets, lie_sizes, Vx, Vxx, structured, assemble, w):
    """Qz = l_z + F^T Vx (w.Qz, z = (x, u)) and the blocks w.Qxx, w.Qux, w.Quu of
    l_zz + F^T Vxx F at knot t, with F = [Fx Fu] (``assemble``: also written to w.F, for the
    regularization on V'_xx)."""
    ndx = Vx.shape[0]
    nu = w.Quu.shape[0]
    nz = ndx + nu
    Fxt, Fut = d.Fx[t], d.Fu[t]
    lx, lu, lxx, lxu, luu = run.lx, run.lu, run.lxx, run.lxu, run.luu
    Qz, Qxx, Qux, Quu, FT = w.Qz, w.Qxx, w.Qux, w.Quu, w.FT
    if assemble:
        copy_into(w.F[:, :ndx], Fxt)
        copy_into(w.F[:, ndx:], Fut)
    if structured:
        for i in range(ndx):
            Qz[i] = lx[t, i]
        for c in range(nu):
            Qz[ndx + c] = lu[t, c]
        for r in range(ndx):
            a = Vx[r]
            for i in range(ndx):
                Qz[i] += Fxt[r, i] * a
            for c in range(nu):
                Qz[ndx + c] += Fut[r, c] * a
        step_quadratic(Vxx, Fxt, Fut, d.Jq[t], d.Jw[t], dt, lie_offsets, lie_sizes, w.Pw, w.Sw,
                       w.Ww, w.Hxw, w.Huw, w.Rw, Qxx, Qux, Quu)
        for i in range(ndx):
            for j in range(ndx):
                Qxx[i, j] += lxx[t, i, j]
        for c in range(nu):
            for i in range(ndx):
                Qux[c, i] += lxu[t, i, c]
            for e in range(nu):
                Quu[c, e] += luu[t, c, e]
    else:
        for r in range(ndx):
            for i in range(ndx):
                FT[i, r] = Fxt[r, i]
            for c in range(nu):
                FT[ndx + c, r] = Fut[r, c]
        for i in range(nz):
            s = lx[t, i] if i < ndx else lu[t, i - ndx]
            for r in range(ndx):
                s += FT[i, r] * Vx[r]
            Qz[i] = s
        _mmt(FT, Vxx, w.VFT)
        _mmt(FT, w.VFT, w.Qzz)
        Qzz = w.Qzz
        for i in range(ndx):
            for j in range(ndx):
                Qxx[i, j] = Qzz[i, j] + lxx[t, i, j]
        for c in range(nu):
            for i in range(ndx):
                Qux[c, i] = Qzz[ndx + c, i] + lxu[t, i, c]
            for e in range(nu):
                Quu[c, e] = Qzz[ndx + c, ndx + e] + luu[t, c, e]


@njit(callee=True, **_JIT)
def _add_second_order_terms(t, model, step, d, so, lam, Qxx, Qux, Quu):
    """Add the exact second-order dynamics terms of knot t contracted with lam (module
    docstring) to Qxx, Qux, Quu.  ``so.mode`` TENSORS contracts the knot's tensors, whatever its
    dynamics (at an impact: those of v+ in (q, q) and (q, v)), and the rows of the forces after
    them (a problem with costs on the forces, stepped through the Dynamics protocol) weighted
    as the contracted kernels weight them (dl/dlam / dt).
    CONTRACTED reads the knot's q, v, acceleration and da_dtau = M^-1 (``so``) with the
    first-order da_dq, da_dv of the derivative phase: at a free knot the contracted FD-SO
    (:func:`~.linked.knot_second_order`, linked), at a knot with contacts or an impact the
    contact dynamics' or impact map's terms (:func:`~.contact_knots.contact_second_order`,
    linked)."""
    dt, B, lie_offsets, lie_sizes = step.dt, step.B, step.lie_offsets, step.lie_sizes
    contacts = step.contacts
    n = d.da_dq.shape[1]
    nu = B.shape[1]
    mu = np.empty(n)
    Lq = np.zeros((n, n))
    Lv = np.zeros((n, n))
    Lqv = np.zeros((n, n))
    LtB = np.zeros((n, nu))  # Lt^T B
    impact = contacts.kind[t] == IMPACT
    if impact:  # x+ = (q, v+): mu = lam_v
        for i in range(n):
            mu[i] = lam[n + i]
    else:
        acceleration_weights(lam, d.Jw[t], dt, mu)
    if so.mode == SecondOrderMode.TENSORS:  # rows n and on: the forces', weighted by dl/dlam
        T2q, T2v, T2qv, T2t = so.tensors
        Lt = np.zeros((n, n))
        per_force = force_cost_weight(step, t)
        for i in range(T2q.shape[1]):
            c = mu[i] if i < n else d.forces.dl_dlam[t, i - n] * per_force
            for j in range(n):
                for k in range(n):
                    Lq[j, k] += c * T2q[t, i, j, k]
                    Lv[j, k] += c * T2v[t, i, j, k]
                    Lqv[j, k] += c * T2qv[t, i, j, k]
                    Lt[j, k] += c * T2t[t, i, j, k]
        gemm_tn(Lt, B, LtB, 1.0, 0.0)
    elif impact or contacts.size[t] > 0:
        call_knot_kernel(LINKED_SECOND_ORDER, (model, step, d, so, t, mu, Lq, Lv, Lqv, LtB))
    else:
        call_knot_kernel(LINKED_FREE_SECOND_ORDER, (model, so.q[t], so.v[t], so.a[t],
                                                    d.da_dq[t], d.da_dv[t], so.da_dtau[t],
                                                    d.da_du[t], mu, Lq, Lv, Lqv, LtB))
    if impact:
        add_impact_hessian(Lq, Lqv, Qxx)
        return
    add_step_hessian(dt, lam, Lq, Lv, Lqv, LtB, d.da_dq[t], d.da_dv[t], d.da_du[t], lie_offsets,
                     lie_sizes, so.lie_H[t], Qxx, Qux, Quu)


@njit(inline="always", **_JIT)
def _regularized(Quu, Qux, F, Fu, reg_u, reg_x, VFr, Qzr, Quu_r, Qux_r):
    """The Q_uu, Q_ux the gains are computed from: Q_uu + reg_u I, and with reg_x the terms of
    V'_xx + reg_x I: + reg_x Fu^T [Fx Fu] (Tassa et al. 2012, eq. 10).  The value update keeps
    the unregularized Q_uu, Q_ux (their eq. 11)."""
    ndx, nu = Fu.shape
    for c in range(nu):
        for i in range(ndx):
            Qux_r[c, i] = Qux[c, i]
        for d in range(nu):
            Quu_r[c, d] = Quu[c, d] + (reg_u if c == d else 0.0)
    if reg_x > 0.0:
        nz = F.shape[1]
        for r in range(ndx):
            for i in range(nz):
                VFr[r, i] = reg_x * F[r, i]
        _mtm(Fu, VFr, Qzr)
        for c in range(nu):
            for i in range(ndx):
                Qux_r[c, i] += Qzr[c, i]
            for d in range(nu):
                Quu_r[c, d] += Qzr[c, ndx + d]


@njit(inline="always", **_JIT)
def _gains(t, Qu, us, lo, hi, bounded, qp_iter, factored, schur, k, K, w):
    """The gains k[t], K[t] from the regularized w.Quu_r, w.Qux_r: the box-QP when ``bounded``
    (warm-started from k[t + 1]), else Cholesky (``factored``: w.L holds the factor already).
    Keeps -W = -L^-1 Q_ux in w.Wn for the Schur value update (``schur``).  False when Q_uu_r is
    not positive definite (on the free set)."""
    T, nu, ndx = K.shape
    Quu_r, Qux_r, L, kt, Kt, x = w.Quu_r, w.Qux_r, w.L, w.kt, w.Kt, w.x
    if bounded:
        lo_t, hi_t, free = w.lo_t, w.hi_t, w.free
        for c in range(nu):
            lo_t[c] = lo[c] - us[t, c]
            hi_t[c] = hi[c] - us[t, c]
            kt[c, 0] = k[t + 1, c] if t + 1 < T else 0.0
        status, nf = box_qp(Quu_r, Qu, lo_t, hi_t, kt[:, 0].copy(), qp_iter, x, free, L)
        if status != 0:
            return False
        for c in range(nu):
            k[t, c] = x[c]
            for i in range(ndx):
                K[t, c, i] = 0.0
        if nf > 0:
            idx = np.empty(nf, dtype=np.int64)
            f = 0
            for c in range(nu):
                if free[c]:
                    idx[f] = c
                    f += 1
            Bf = np.empty((nf, ndx))
            Xf = np.empty((nf, ndx))
            for a in range(nf):
                copy_into(Bf[a], Qux_r[idx[a]])
            cholesky_solve(L[:nf, :nf], Bf, Xf)
            for a in range(nf):
                copy_into(K[t, idx[a]], Xf[a])
        return True
    if not (factored or cholesky(Quu_r, L)):
        return False
    cholesky_solve(L, Qu.reshape((nu, 1)), kt)
    forward_substitution(L, Qux_r, Kt)  # -W = -L^{-1} Qux, kept for the Schur form
    if schur:
        copy_into(w.Wn, Kt)
    back_substitution(L, Kt)
    for c in range(nu):
        k[t, c] = kt[c, 0]
        copy_into(K[t, c], Kt[c])
    return True


@njit(inline="always", **_JIT)
def _expected_decrease(Quu, Qu, kt, x, dV):
    """dV += (k.Qu, 1/2 k.Quu.k) of one knot (x: a work vector, left as Quu k)."""
    nu = kt.shape[0]
    for c in range(nu):
        x[c] = 0.0
        for d in range(nu):
            x[c] += Quu[c, d] * kt[d]
        dV[0] += kt[c] * Qu[c]
        dV[1] += 0.5 * kt[c] * x[c]


@njit(inline="always", **_JIT)
def _general_value_update(Qz, Qxx, Quu, Qux, k, K, Quuk, KT, ZT, KZ, Vx, Vxx):
    """V_x = Q_x + K^T (Quu k + Qu) + Qux^T k; V_xx = Q_xx + sym(K^T (Quu K + 2 Qux))
    (= Q_xx + K^T Quu K + K^T Qux + Qux^T K): Tassa et al. (2012, eq. 11), with Quuk = Quu k."""
    nu, ndx = Qux.shape
    for i in range(ndx):
        Vx[i] = Qz[i]
    for c in range(nu):
        a = Quuk[c] + Qz[ndx + c]
        b = k[c]
        for i in range(ndx):
            Vx[i] += K[c, i] * a + Qux[c, i] * b
    # KZ = K^T Z with Z = Quu K + 2 Qux, as row products of KT = K^T and ZT = Z^T
    for i in range(ndx):
        for c in range(nu):
            KT[i, c] = K[c, i]
    _mmt(KT, Quu, ZT)
    for i in range(ndx):
        for c in range(nu):
            ZT[i, c] += 2.0 * Qux[c, i]
    _mmt(KT, ZT, KZ)
    for i in range(ndx):
        for j in range(i, ndx):
            a = Qxx[i, j] + 0.5 * (KZ[i, j] + KZ[j, i])
            Vxx[i, j] = a
            Vxx[j, i] = a


@njit(inline="always", **_JIT)
def _schur_value_update(Qz, Qxx, Qux, k, K, Wn, reg_u, Z, ZZ, Vx, Vxx):
    """V_x, V_xx of the general form (Tassa et al. 2012, eq. 11) for gains of the unclamped
    Q_uu_r = Q_uu + reg_u I = L L^T with reg_x = 0, from W = L^{-1} Q_ux (Wn = -W)::

        V_x = Q_x + Q_ux^T k - reg_u K^T k,   V_xx = Q_xx - W^T W - reg_u K^T K

    (K^T Q_uu K = W^T W - reg_u K^T K and K^T Q_ux = -W^T W): a Schur complement, symmetric by
    construction, with a third of the general form's products (UR3's backward pass 200 ->
    175 us).  The two products are one BLAS product Z^T Z of Z = [Wn; sqrt(reg_u) K] (work
    array (2 nu, ndx), ZZ (ndx, ndx)): faster than our loops at every size measured, UR3 to
    ATLAS (nu = 30, ndx = 72: 17 -> 7.5 us, 33 -> 12 us with reg_u > 0)."""
    nu, ndx = Wn.shape
    for i in range(ndx):
        Vx[i] = Qz[i]
    for c in range(nu):
        b = k[c]
        kr = reg_u * b
        for i in range(ndx):
            Vx[i] += Qux[c, i] * b - K[c, i] * kr
    rows = nu
    copy_into(Z[:nu], Wn)
    if reg_u > 0.0:
        s = np.sqrt(reg_u)
        for c in range(nu):
            for j in range(ndx):
                Z[nu + c, j] = s * K[c, j]
        rows = 2 * nu
    Zr = Z[:rows]
    np.dot(Zr.T, Zr, ZZ)
    for i in range(ndx):  # Q_xx is symmetric up to rounding: keep its upper triangle
        for j in range(i, ndx):
            a = Qxx[i, j] - ZZ[i, j]
            Vxx[i, j] = a
            Vxx[j, i] = a


@njit(inline="always", **_JIT)
def _value_update(Vx, Vxx, reg_v, gap, infeasible, Vx_out, fVxx_out):
    """With gaps V_x += V_xx f, then V_xx += reg_v I (in place); store V_x and V_xx f.  (The gap
    term uses the unregularized V_xx: with the exact second-order terms, contracted with V_x, a
    large reg_v times a gap would otherwise enter Q_uu.)"""
    ndx = Vx.shape[0]
    for i in range(ndx):
        s = 0.0
        if infeasible:
            for j in range(ndx):
                s += Vxx[i, j] * gap[j]
        fVxx_out[i] = s
        Vx[i] += s
        Vx_out[i] = Vx[i]
    for i in range(ndx):
        Vxx[i, i] += reg_v


@njit(**_JIT)
def step_hessians(t, lam, model, step, derivatives, second_order):
    """(Fxx, Fxu, Fuu) of knot t: the second-order terms of the backward pass alone."""
    n = derivatives.Jw.shape[1]
    nu = step.B.shape[1]
    Fxx = np.zeros((2 * n, 2 * n))
    Fux = np.zeros((nu, 2 * n))
    Fuu = np.zeros((nu, nu))
    _add_second_order_terms(t, model, step, _borrowed_derivatives(derivatives),
                            _borrowed_second_order(second_order), lam, Fxx, Fux, Fuu)
    return Fxx, Fux.T.copy(), Fuu


# ---------------------------------------------------------------------------------- gradient
@njit(**_JIT)
def gradient_norm(Fx, Fu, lx, lu, lx_T, us, lo, hi):
    """|| dJ/du || (projected onto the box) by the adjoint sweep lam_t = l_x + Fx^T lam_{t+1}
    (the products run along the rows of Fx and Fu: contiguous, vectorized)."""
    T, ndx, nu = Fu.shape
    lam = lx_T.copy()
    nxt = np.empty(ndx)
    g = np.empty(nu)
    total = 0.0
    for t in range(T - 1, -1, -1):
        for c in range(nu):
            g[c] = lu[t, c]
        for i in range(ndx):
            nxt[i] = lx[t, i]
        for r in range(ndx):
            lr = lam[r]
            for c in range(nu):
                g[c] += Fu[t, r, c] * lr
            for i in range(ndx):
                nxt[i] += Fx[t, r, i] * lr
        for c in range(nu):
            if not ((us[t, c] <= lo[c] and g[c] > 0.0) or (us[t, c] >= hi[c] and g[c] < 0.0)):
                total += g[c] * g[c]
        copy_into(lam, nxt)
    return np.sqrt(total)
