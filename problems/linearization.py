"""The geometric linearization at work (``soddp linearize``): the paper's validation and LQR on a
free-floating space manipulator.

* :func:`validation`: on the system of Bos et al. (2022, Fig. 4) with every joint at 0.3, the
  error of geometric central differences (exp-map perturbations ``q (+) delta e_k``) against the
  analytical forward-dynamics derivatives, for steps delta from 1e-1 to 1e-10 (the paper's
  Fig. 5): the error falls as delta^2 until rounding takes over.  ``results/linearization_fd_error``.
* :func:`space_manipulator_lqr`: a free base (thrusters give a 6D wrench) carrying a 3-DoF arm in
  zero gravity, held at an equilibrium by infinite-horizon LQR on :func:`dynamics.linearize`;
  started 0.3 rad / 0.2 m / 0.4 rad and 0.1 rad/s away, the closed loop is simulated with our forward dynamics
  (semi-implicit Euler, 1 ms).  ``results/lqr_space_manipulator``.
"""

from __future__ import annotations

import numpy as np

import ddp
import dynamics as dyn
from dynamics import robots

from .output import pyplot, save_figure, tight_layout, write_table

STEPS = 10.0 ** -np.arange(1, 11)


def validation(log=print):
    """Max and mean |central difference - analytical| of da/dq, da/dv over steps delta."""
    m = robots.bos_validation_tree()
    q = robots.bos_validation_configuration(m)
    rng = np.random.default_rng(0)
    v, tau = rng.normal(size=(2, m.nv))
    lin = dyn.linearize(m, q, v, tau)
    exact = np.concatenate([lin.da_dq, lin.da_dv], axis=1)
    rows = []
    for h in STEPS:
        cols = []
        for k in range(2 * m.nv):
            e = np.zeros(2 * m.nv)
            e[k] = h
            plus = dyn.aba(m, m.integrate(q, e[:m.nv]), v + e[m.nv:], tau)
            minus = dyn.aba(m, m.integrate(q, -e[:m.nv]), v - e[m.nv:], tau)
            cols.append((plus - minus) / (2 * h))
        err = np.abs(np.stack(cols, axis=1) - exact)
        rows.append(dict(step=h, max_error=err.max(), mean_error=err.mean()))
    write_table(rows, "linearization_fd_error",
                "Geometric central differences against the geometric linearization",
                [("step", "step delta"), ("max_error", "max error"), ("mean_error", "mean error")],
                notes=["system: `robots.bos_validation_tree()` (moving base, branched tree of "
                       "revolute, prismatic and helical joints), every joint at 0.3",
                       "quantity: da/dq, da/dv (forward dynamics, local perturbations)"],
                log=log)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.loglog([r["step"] for r in rows], [r["max_error"] for r in rows], "o-", label="max")
    ax.loglog([r["step"] for r in rows], [r["mean_error"] for r in rows], "s-", label="mean")
    ax.set_xlabel("finite-difference step delta")
    ax.set_ylabel("|central difference - analytical|")
    ax.set_title("Bos et al. validation tree, joints at 0.3")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    tight_layout(fig)
    save_figure(fig, "linearization_fd_error")
    return rows


def space_manipulator_lqr(duration=5.0, dt=1e-3, log=print):
    """Closed-loop recovery of the space manipulator under infinite-horizon LQR."""
    m = robots.space_manipulator()
    n = m.nv
    q0 = m.neutral()
    q0[7:] = [0.3, -0.6, 0.9]
    lin = dyn.linearize(m, q0, np.zeros(n), np.zeros(n))
    Q = np.concatenate([[1000.0] * 6, [500.0] * 3, [50.0] * 6, [20.0] * 3])
    gains = ddp.lqr.infinite_horizon(lin, Q, np.full(n, 0.01))
    x_err = np.zeros(2 * n)
    x_err[:6] = [0.2, -0.1, 0.1, 0.3, 0.0, -0.2]  # base: translation (m), rotation (rad)
    x_err[6:9] = [0.4, -0.3, 0.2]
    x_err[n + 3:n + 6] = [0.1, 0.0, -0.1]  # base angular velocity (rad/s)
    q = m.integrate(q0, x_err[:n])
    v = x_err[n:].copy()
    steps = int(round(duration / dt))
    t = np.arange(steps + 1) * dt
    err = np.empty((steps + 1, 2 * n))
    effort = np.empty(steps + 1)
    for s in range(steps + 1):
        err[s] = np.concatenate([m.difference(q0, q), v])
        u = gains.K @ err[s]
        effort[s] = np.linalg.norm(u)
        if s < steps:
            v = v + dt * dyn.aba(m, q, v, u)
            q = m.integrate(q, dt * v)
    poles = np.linalg.eigvals(lin.A + lin.B @ gains.K)
    rows = [dict(time=float(t[s]), base_translation_error=float(np.linalg.norm(err[s, :3])),
                 base_rotation_error=float(np.linalg.norm(err[s, 3:6])),
                 joint_error=float(np.linalg.norm(err[s, 6:n])), control_norm=float(effort[s]))
            for s in range(0, steps + 1, steps // 50)]
    write_table(rows, "lqr_space_manipulator",
                "LQR on the geometric linearization: space manipulator recovery",
                [("time", "t [s]"), ("base_translation_error", "|base translation error| [m]"),
                 ("base_rotation_error", "|base rotation error| [rad]"),
                 ("joint_error", "|joint error| [rad]"), ("control_norm", "|u|")],
                notes=[f"model: `robots.space_manipulator()` (free base with thrusters, 3-DoF "
                       f"arm, zero gravity), nv = {n}",
                       "LQR: continuous ARE on `dynamics.linearize` at the equilibrium, "
                       "Q = diag(1000 base pose, 500 joints, 50 base twist, 20 joint rates), "
                       "R = 0.01 I",
                       f"slowest closed-loop pole of the linearization: "
                       f"{poles.real.max():.3f} 1/s",
                       f"simulation: our forward dynamics, semi-implicit Euler, dt = {dt} s"],
                log=log)
    plt = pyplot()
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(6.5, 5.5), sharex=True)
    a1.semilogy(t, np.linalg.norm(err[:, :3], axis=1), label="base translation [m]")
    a1.semilogy(t, np.linalg.norm(err[:, 3:6], axis=1), label="base rotation [rad]")
    a1.semilogy(t, np.linalg.norm(err[:, 6:n], axis=1), label="arm joints [rad]")
    a1.semilogy(t, np.linalg.norm(err[:, n:], axis=1), label="velocities")
    a1.set_ylabel("error norm")
    a1.set_title("Space manipulator: LQR on the geometric linearization")
    a1.grid(True, which="both", alpha=0.3)
    a1.legend(fontsize=8)
    a2.plot(t, effort)
    a2.set_ylabel("|u| (base wrench, joint torques)")
    a2.set_xlabel("time [s]")
    a2.grid(True, alpha=0.3)
    tight_layout(fig)
    save_figure(fig, "lqr_space_manipulator")
    return rows


def run(log=print):
    validation(log)
    space_manipulator_lqr(log=log)
