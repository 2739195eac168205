"""Accuracy metrics and the finite-difference alternatives of the second-order paper.

* :func:`metrics`: MAE, RMSAE, MRE, RMSRE (eq. 40-43) of a tensor against a reference.
* :func:`id_hessian`: the n x 3n x 3n second-derivative tensor of tau(q, v, a) that the paper's
  metrics are taken over, assembled from an :class:`~dynamics.results.IDDerivatives`.
* :func:`finite_diff_1`: Finite-Diff-1 (App. A.II.1), second-order central differences of RNEA,
  steps h = k (the paper found the best between 1e-4 and 1e-3).
* :func:`finite_diff_2`: Finite-Diff-2 (App. A.II.2), first-order central differences of the
  analytical first derivatives (IDSVA), step h = 1e-5 (the paper's best).

Configuration perturbations are taken on the manifold, ``q (+) h e_k``; a second derivative along
(j, k) perturbs along k first and then along j, matching ``T[i, j, k] = L_{x_k}(L_{x_j} f_i)``.
Each method evaluates all its perturbed states in one batched (parallel) kernel call.
"""

from __future__ import annotations

import numpy as np

from .algorithms import id_derivatives, rnea
from .results import IDDerivatives

FD1_STEP = 3e-4
FD2_STEP = 1e-5


def metrics(A, A_ref) -> dict:
    """The paper's error metrics of A against A_ref (same shape): MAE (eq. 40), RMSAE (41),
    MRE (42) and RMSRE (43), with the relative error of an entry taken w.r.t. max(|ref|, 1)."""
    A, A_ref = np.asarray(A, dtype=float), np.asarray(A_ref, dtype=float)
    if A.shape != A_ref.shape:
        raise ValueError(f"A: expected the shape of A_ref {A_ref.shape}; got {A.shape}")
    d = A - A_ref
    r = d / np.maximum(np.abs(A_ref), 1.0)
    return dict(MAE=float(np.max(np.abs(d))), RMSAE=float(np.sqrt(np.mean(d * d))),
                MRE=float(np.max(np.abs(r))), RMSRE=float(np.sqrt(np.mean(r * r))))


def id_hessian(d: IDDerivatives) -> np.ndarray:
    """The (n, 3n, 3n) tensor of second derivatives of tau w.r.t. x = (q, v, a):
    blocks [[d2tau_dq2, d2tau_dqdv, dM_dq], [d2tau_dvdq, d2tau_dv2, 0], [dM_dq^R, 0, 0]] where
    ``^R`` swaps the two derivative axes (d2tau/da_j dq_k = dM[:, j, k])."""
    n = d.d2tau_dq2.shape[-1]
    H = np.zeros((n, 3 * n, 3 * n))
    H[:, :n, :n] = d.d2tau_dq2
    H[:, :n, n:2 * n] = d.d2tau_dqdv
    H[:, n:2 * n, :n] = np.swapaxes(d.d2tau_dqdv, 1, 2)
    H[:, n:2 * n, n:2 * n] = d.d2tau_dv2
    H[:, 2 * n:, :n] = d.dM_dq
    H[:, :n, 2 * n:] = np.swapaxes(d.dM_dq, 1, 2)
    return H


def _single(model, q, v, a):
    q, v, a = (np.asarray(x, dtype=float) for x in (q, v, a))
    if q.ndim != 1:
        raise ValueError(f"q: the finite-difference methods take one point, shape ({model.nq},); "
                         f"got shape {q.shape}")
    return q, v, a


def finite_diff_2(model, q, v, a, h: float = FD2_STEP) -> IDDerivatives:
    """Finite-Diff-2: central differences of IDSVA's first derivatives (one point)."""
    q, v, a = _single(model, q, v, a)
    n = model.nv
    E = np.eye(n) * h
    Q = np.concatenate([model.integrate(np.tile(q, (n, 1)), E),
                        model.integrate(np.tile(q, (n, 1)), -E),
                        np.tile(q, (2 * n, 1))])
    V = np.concatenate([np.tile(v, (2 * n, 1)), v + E, v - E])
    A = np.tile(a, (4 * n, 1))
    d = id_derivatives(model, Q, V, A)
    c = id_derivatives(model, q, v, a)
    sl = [slice(k * n, (k + 1) * n) for k in range(4)]  # q+, q-, v+, v-
    diff = lambda X, p, m: np.moveaxis((X[sl[p]] - X[sl[m]]) / (2 * h), 0, -1)
    return IDDerivatives(c.tau, c.dtau_dq, c.dtau_dv, c.M,
                         d2tau_dq2=diff(d.dtau_dq, 0, 1), d2tau_dv2=diff(d.dtau_dv, 2, 3),
                         d2tau_dqdv=diff(d.dtau_dq, 2, 3), dM_dq=diff(d.M, 0, 1))


def finite_diff_1(model, q, v, a, h: float = FD1_STEP) -> IDDerivatives:
    """Finite-Diff-1: second-order central differences of RNEA (one point), eq. 55-56 with
    k = h.  First derivatives by central differences too."""
    q, v, a = _single(model, q, v, a)
    n = model.nv
    I = np.eye(n)
    steps = [(+1, +1), (+1, -1), (-1, +1), (-1, -1)]

    # states: index (s, j, k) -> perturb along k (first), then along j, with signs s
    def q_pair_states():
        Q = []
        for sj, sk in steps:
            qk = model.integrate(np.tile(q, (n, 1)), sk * h * I)          # q (+) sk h e_k
            Qk = np.repeat(qk, n, axis=0)                                 # [k * n + j]
            Q.append(model.integrate(Qk, np.tile(sj * h * I, (n, 1))))    # (+) sj h e_j
        return np.concatenate(Q)

    Qqq = q_pair_states()
    Vb = np.tile(v, (n * n, 1))
    Ab = np.tile(a, (n * n, 1))
    Qb = np.tile(q, (n * n, 1))
    VV, Qv, Vq, Aq = [], [], [], []
    qj = {s: model.integrate(np.tile(q, (n, 1)), s * h * I) for s in (+1, -1)}
    for sj, sk in steps:
        VV.append(Vb + np.repeat(sk * h * I, n, axis=0) + np.tile(sj * h * I, (n, 1)))
        Qv.append(np.repeat(qj[sj], n, axis=0))           # [j * n + k]: q (+) sj h e_j
        Vq.append(Vb + np.tile(sk * h * I, (n, 1)))       #            v + sk h e_k
        Aq.append(Ab + np.tile(sk * h * I, (n, 1)))       #            a + sk h e_k
    Qall = np.concatenate([Qqq, np.tile(Qb, (4, 1)), np.concatenate(Qv), np.concatenate(Qv)])
    Vall = np.concatenate([np.tile(Vb, (4, 1)), np.concatenate(VV), np.concatenate(Vq),
                           np.tile(Vb, (4, 1))])
    Aall = np.concatenate([np.tile(Ab, (4, 1)), np.tile(Ab, (4, 1)), np.tile(Ab, (4, 1)),
                           np.concatenate(Aq)])
    tau = rnea(model, Qall, Vall, Aall).reshape(4, 4, n, n, n)  # block, sign, outer, inner, i
    mix = lambda b: (tau[b, 0] - tau[b, 1] - tau[b, 2] + tau[b, 3]) / (4 * h * h)
    # q-q and v-v: outer index k, inner j -> T[i, j, k]
    d2q = np.transpose(mix(0), (2, 1, 0))
    d2v = np.transpose(mix(1), (2, 1, 0))
    # q-v and q-a: outer index j (q), inner k (v or a) -> T[i, j, k]
    d2qv = np.transpose(mix(2), (2, 0, 1))
    dM_as_daq = np.transpose(mix(3), (2, 0, 1))  # d/da_k (dtau_i/dq_j) = dM_ik/dq_j
    dM = np.transpose(dM_as_daq, (0, 2, 1))
    # diagonal (j = k) entries of the pure blocks: three-point formula (eq. 55)
    t0 = rnea(model, q, v, a)
    qp, qm = qj[+1], qj[-1]
    tq = rnea(model, np.concatenate([qp, qm]), np.tile(v, (2 * n, 1)), np.tile(a, (2 * n, 1)))
    tv = rnea(model, np.tile(q, (2 * n, 1)), np.concatenate([v + h * I, v - h * I]),
              np.tile(a, (2 * n, 1)))
    for j in range(n):
        d2q[:, j, j] = (tq[j] - 2 * t0 + tq[n + j]) / (h * h)
        d2v[:, j, j] = (tv[j] - 2 * t0 + tv[n + j]) / (h * h)
    ta = rnea(model, np.tile(q, (2 * n, 1)), np.tile(v, (2 * n, 1)),
              np.concatenate([a + h * I, a - h * I]))
    central = lambda t: ((t[:n] - t[n:]) / (2 * h)).T
    return IDDerivatives(t0, central(tq), central(tv), central(ta), d2tau_dq2=d2q, d2tau_dv2=d2v,
                         d2tau_dqdv=d2qv, dM_dq=dM)
