"""The higher-order paper's example (Ali, Gabellieri, Franchi 2026, Sec. 7; ``soddp higher-order``):
the 12-DoF aerial manipulator (``robots.load("aerial_manipulator")``) on the reference motion of
Table 3, its inverse dynamics and their time derivatives up to order 5, and the round trips.

Reference motion (Table 3): the base moves on a circle of radius 1 m at z = 0 (phase rate
2 pi / 20 rad/s) with yaw 25 deg * sin(2 pi t / 30); the joints follow half-cosines
q_j(t) = q0_j + eta_j / 2 (1 - cos(pi t / T)), q0 = deg(10, -5, 15, -10, 7, -12), eta = deg(60, 50,
40, 55, 45, 35), T = 30 s, sampled every 0.01 s.  The propellers' parameters are not given in the
paper, so the base wrench (in the base frame) is the input: ``tau[:6]`` of our convention.

Outputs (``results/``):

* ``higher_order_tau.png``: the base wrench and joint torques and their derivatives, r = 0..5;
* ``higher_order_round_trip.{csv,md,png}``: per order, H-GABI fed with H-GRNE's torques against
  the reference accelerations (the paper's Fig. 3), and the hybrid algorithm (base twist and arm 1
  prescribed, arm 2 torque-driven) against both.
"""

from __future__ import annotations

import numpy as np

from dynamics import higher_order as ho
from dynamics import robots
from dynamics import time_curves as tc

from .output import pyplot, save_figure, tight_layout, write_table

HORIZON = 30.0
DT = 0.01
ORDER = 5
Q0 = np.deg2rad([10, -5, 15, -10, 7, -12])
ETA = np.deg2rad([60, 50, 40, 55, 45, 35])
RADIUS, PHASE_RATE, YAW_RATE, YAW_AMPLITUDE = 1.0, 2 * np.pi / 20, 2 * np.pi / 30, np.deg2rad(25)


def reference_curve(horizon=HORIZON):
    """q(t) of Table 3's reference motion as a CasADi expression (see module docstring)."""

    def q_of_t(t, p=None):
        import casadi as cs

        yaw = YAW_AMPLITUDE * cs.sin(YAW_RATE * t)
        base = cs.vertcat(RADIUS * cs.cos(PHASE_RATE * t), RADIUS * cs.sin(PHASE_RATE * t), 0,
                          tc.axis_quat([0, 0, 1], yaw))
        joints = [Q0[j] + ETA[j] / 2 * (1 - cs.cos(np.pi * t / horizon)) for j in range(6)]
        return cs.vertcat(base, *joints)

    return q_of_t


def reference(times, order=ORDER, horizon=HORIZON):
    """q (T, 13) and [v, ..., v^(order+1)] (T, order+2, 12) of the reference motion at ``times``."""
    m = robots.load("aerial_manipulator")
    return tc.evaluate(tc.curve_function(m, reference_curve(horizon), order + 1), times)


def run(horizon=HORIZON, dt=DT, order=ORDER, log=print):
    """Inverse dynamics derivatives along the reference, the ID -> FD and hybrid round trips;
    writes the table and figures listed in the module docstring and returns the table rows."""
    m = robots.load("aerial_manipulator")
    times = np.arange(0.0, horizon + dt / 2, dt)
    log(f"aerial manipulator: {times.size} samples, orders 0..{order}")
    Q, VD = reference(times, order, horizon)
    tau = ho.rnea(m, Q, VD)
    acc = ho.aba(m, Q, VD[:, 0], tau)
    arm1 = [f"arm1_joint{k}" for k in (1, 2, 3)]
    motion = np.zeros(m.nv, bool)
    motion[:9] = True  # base twist (6) and arm 1 (3) prescribed; arm 2 torque-driven
    hyb = ho.hybrid(m, Q, VD[:, 0], np.where(motion, VD[:, 1:], 0.0), np.where(motion, 0.0, tau),
                    motion_joints=arm1, base="twist")
    rows = []
    for k in range(order + 1):
        ref_acc = VD[:, k + 1]
        rows.append(dict(
            order=k, max_tau=np.abs(tau[:, k]).max(), max_acc=np.abs(ref_acc).max(),
            fd_error=np.abs(acc[:, k] - ref_acc).max(),
            hybrid_acc_error=np.abs(hyb.accel_derivs[:, k, ~motion] - ref_acc[:, ~motion]).max(),
            hybrid_tau_error=np.abs(hyb.tau_derivs[:, k, motion] - tau[:, k, motion]).max()))
    write_table(rows, "higher_order_round_trip",
                "Aerial manipulator: round trips of the higher-order dynamics along Table 3's motion",
                [("order", "r"), ("max_tau", "max abs tau^(r)"), ("max_acc", "max abs v^(r+1)"),
                 ("fd_error", "ID->FD max abs error"),
                 ("hybrid_acc_error", "hybrid: arm 2 accelerations, max abs error"),
                 ("hybrid_tau_error", "hybrid: base wrench + arm 1 torques, max abs error")],
                notes=[f"{times.size} samples, t in [0, {horizon:g}] s every {dt:g} s; reference "
                       "velocities and their derivatives by CasADi AD of the closed-form q(t)",
                       "ID->FD: H-GABI(q, v, H-GRNE(q, v-derivatives)) against the reference "
                       "v^(r+1); hybrid: base twist and arm 1 prescribed, arm 2 driven by the "
                       "torques of H-GRNE",
                       "base wrench = input (the paper gives no propeller parameters)"],
                log=log)
    _plot_tau(times, tau)
    _plot_round_trip(times, VD, acc, hyb, motion)
    return rows


_LABELS = ["f_x", "f_y", "f_z", "n_x", "n_y", "n_z"] + [f"arm{a} q{j}" for a in (1, 2)
                                                      for j in (1, 2, 3)]


def _plot_tau(times, tau):
    plt = pyplot()
    order = tau.shape[1] - 1
    fig, axes = plt.subplots(2, 3, figsize=(13, 6.5), sharex=True)
    for k, ax in enumerate(axes.flat[:order + 1]):
        for j in range(tau.shape[2]):
            ax.plot(times, tau[:, k, j], "--" if j < 6 else "-", lw=1, label=_LABELS[j])
        ax.set_title(f"r = {k}: " + ("base wrench, joint torques" if k == 0 else
                                     f"d^{k}/dt^{k}"))
        ax.grid(True, alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("t [s]")
    axes[0, 0].set_ylabel("N, N m (per s^r)")
    axes[1, 0].set_ylabel("N, N m (per s^r)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center right", fontsize=8)
    fig.suptitle("Aerial manipulator (Ali et al. 2026, Table 3 motion): H-GRNE, orders 0-5 "
                 "(dashed: base wrench in the base frame)")
    tight_layout(fig, rect=(0, 0, 0.91, 0.96))
    save_figure(fig, "higher_order_tau")


def _plot_round_trip(times, VD, acc, hyb, motion):
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), sharey=True)
    tiny = 1e-18
    for k in range(acc.shape[1]):
        err = np.abs(acc[:, k] - VD[:, k + 1]).max(axis=1)
        axes[0].semilogy(times, err + tiny, lw=1, label=f"r = {k}")
        herr = np.maximum(np.abs(hyb.accel_derivs[:, k, ~motion] - VD[:, k + 1, ~motion]).max(axis=1),
                          0.0)
        axes[1].semilogy(times, herr + tiny, lw=1, label=f"r = {k}")
    axes[0].set_title("ID -> FD: |H-GABI(H-GRNE) - v^(r+1)| (max over DoFs)")
    axes[1].set_title("hybrid: arm 2 |v^(r+1) error| (base twist, arm 1 prescribed)")
    for ax in axes:
        ax.set_xlabel("t [s]")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, ncol=2)
    axes[0].set_ylabel("absolute error")
    tight_layout(fig)
    save_figure(fig, "higher_order_round_trip")
