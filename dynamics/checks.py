"""Check any backend's derivatives against central differences on the manifold
(:func:`check_derivatives`): the tool for a user's own system, and for ours.

First derivatives are compared with central differences of the backend's ``aba`` along right
perturbations (``q (+) h e_k`` through its ``integrate``), second derivatives with central
differences of its own first derivatives (the convention ``T[i, j, k] = d/dx_k (dA/dx_j)_i``),
so a wrong tensor is caught even when the first derivatives are right.  Shares no code with the
derivatives it checks: only ``aba``, ``integrate`` and ``fd_derivatives`` of the backend.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: the fields checked: (name, what it is)
FIRST = (("da_dq", "da/dq"), ("da_dv", "da/dv"), ("da_dtau", "da/dtau = M^-1"))
SECOND = (("d2a_dq2", "d/dq_k (da/dq_j)"), ("d2a_dv2", "d/dv_k (da/dv_j)"),
          ("d2a_dqdv", "d/dv_k (da/dq_j)"), ("d2a_dtaudq", "d/dq_k (da/dtau_j)"))


@dataclass
class DerivativeCheck:
    """Per field: the largest absolute error and the error relative to the reference's largest
    entry; ``ok`` when every relative error is below ``tol``."""

    rows: list = field(default_factory=list)
    tol: float = 1e-5

    @property
    def ok(self) -> bool:
        return all(r["relative"] <= self.tol for r in self.rows)

    def __getitem__(self, name):
        return next(r for r in self.rows if r["field"] == name)

    def __str__(self):
        lines = [f"{'field':12s} {'what':22s} {'max |error|':>12s} {'relative':>10s}  ok"]
        for r in self.rows:
            lines.append(f"{r['field']:12s} {r['what']:22s} {r['absolute']:12.2e} "
                         f"{r['relative']:10.2e}  {'yes' if r['relative'] <= self.tol else 'NO'}")
        lines.append(f"{'all within' if self.ok else 'NOT all within'} {self.tol:g} (relative)")
        return "\n".join(lines)


def check_derivatives(dynamics, q, v, tau, order: int = 2, h: float = 1e-6, tol: float = 1e-5,
                      verbose: bool = True) -> DerivativeCheck:
    """Compare ``dynamics.fd_derivatives`` (any :class:`~dynamics.protocol.Dynamics`) at one
    point with central differences of step ``h``; ``order`` 1 or 2 (the full tensors).
    Prints the table when ``verbose``; returns the :class:`DerivativeCheck`."""
    if order not in (1, 2):
        raise ValueError(f"order: expected 1 or 2; got {order!r}")
    q, v, tau = (np.asarray(x, dtype=float) for x in (q, v, tau))
    n = int(dynamics.nv)
    for name, x, size in (("q", q, dynamics.nq), ("v", v, n), ("tau", tau, n)):
        if x.shape != (size,) or not np.all(np.isfinite(x)):
            raise ValueError(f"{name}: expected {size} finite values (one point); got shape "
                             f"{x.shape}")
    d = dynamics.fd_derivatives(q, v, tau, order=order)
    E = np.eye(n)

    def along(f, k, which):
        """Central difference of f(q, v, tau) along the k-th tangent direction of ``which``."""
        if which == "q":
            plus = f(dynamics.integrate(q, h * E[k]), v, tau)
            minus = f(dynamics.integrate(q, -h * E[k]), v, tau)
        elif which == "v":
            plus, minus = f(q, v + h * E[k], tau), f(q, v - h * E[k], tau)
        else:
            plus, minus = f(q, v, tau + h * E[k]), f(q, v, tau - h * E[k])
        return (np.asarray(plus) - np.asarray(minus)) / (2 * h)

    report = DerivativeCheck(tol=tol)

    def compare(name, what, got, ref):
        got = np.asarray(got, dtype=float)
        if got.shape != ref.shape:
            raise ValueError(f"fd_derivatives: {name}: expected shape {ref.shape}; got "
                             f"{got.shape}")
        err = float(np.max(np.abs(got - ref)))
        report.rows.append(dict(field=name, what=what, absolute=err,
                                relative=err / max(float(np.max(np.abs(ref))), 1e-12)))

    aba = dynamics.aba
    for (name, what), which in zip(FIRST, ("q", "v", "tau")):
        ref = np.stack([along(aba, k, which) for k in range(n)], axis=-1)
        compare(name, what, getattr(d, name), ref)
    if order == 2:
        def first(field):
            return lambda q_, v_, t_: getattr(dynamics.fd_derivatives(q_, v_, t_), field)

        for (name, what), (field_, which) in zip(SECOND, (("da_dq", "q"), ("da_dv", "v"),
                                                          ("da_dq", "v"), ("da_dtau", "q"))):
            ref = np.stack([along(first(field_), k, which) for k in range(n)], axis=-1)
            compare(name, what, getattr(d, name), ref)
    if verbose:
        print(report)
    return report
