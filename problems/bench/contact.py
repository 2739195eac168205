"""``soddp bench contact``: the contact dynamics' derivatives beside Pinocchio, and their
accuracy (results/contact_derivatives).

Per robot and contact set, batched over T knots (time per knot, one thread and the machine's
threads): our first derivatives of the KKT contact dynamics (the dynamics included), our second
derivatives contracted with a co-state over (a, lam), and the impact map's first derivatives;
beside Pinocchio 4.1's Python binding, knot by knot, ``constraintDynamics`` then
``computeConstraintDynamicsDerivatives`` (its floor: the binding's call costs are in it).
Accuracy: the first derivatives against Pinocchio's, the second against CasADi's AD of the
KKT system written in SX (:mod:`problems.reference.casadi_contacts`; HyQ, ATLAS and Talos's
legs on flat feet).
"""

from __future__ import annotations

import os
import time

import numpy as np
import pinocchio as pin

import dynamics as dyn
from dynamics import robots
from dynamics.contact_dynamics import (constrained_derivatives, constrained_second_derivatives,
                                       impulse_dynamics)
from dynamics.contacts import Contact3D, Contact6D, ContactSet

from ..output import write_table
from ..reference import pinocchio_cpp
from ..reference.casadi_contacts import contact_dynamics_reference
from ..reference.pinocchio_contacts import rigid_contacts
from .timing import random_states, ratio, time_us, time_us_alternating

#: (robot, feet, flat) of the benchmark: point contacts, or flat feet (Contact6D) if flat
CASES = (("hyq", ("lf_foot", "rf_foot", "lh_foot", "rh_foot"), False),
         ("hyq", ("lf_foot", "rh_foot"), False), ("atlas", ("l_foot", "r_foot"), False),
         ("talos", ("left_sole_link", "right_sole_link"), False),
         ("atlas", ("l_foot", "r_foot"), True),
         ("talos_legs", ("left_sole_link", "right_sole_link"), True),
         ("talos", ("left_sole_link", "right_sole_link"), True))
#: the cases whose second derivatives are checked against CasADi
CASADI_CASES = (0, 2, 5)

COLUMNS = [("robot", "robot"), ("nv", "nv"), ("contacts", "contacts"),
           ("fo_us", "first order [us/knot]"), ("fo_1t_us", "first order, 1 thread"),
           ("pin_us", "Pinocchio (Python) [us/knot]"), ("fo_vs_pin", "first order / Pinocchio"),
           ("cpp_us", "Pinocchio C++ [us/knot]"), ("fo_vs_cpp", "first order / C++"),
           ("fo1_vs_cpp", "first order, 1 thread / C++"),
           ("so_us", "second order, contracted [us/knot]"), ("so_vs_fo", "second / first"),
           ("so_1t_us", "second order, 1 thread"), ("so1_vs_fo1", "second / first, 1 thread"),
           ("impact_us", "impact map, first order [us/knot]"),
           ("err_pin", "first order vs Pinocchio"), ("err_casadi", "second order vs CasADi")]


def _pinocchio(m, feet, flat):
    """A function (q, v, tau) -> the derivatives of Pinocchio's constraint dynamics."""
    pm = m.pin_model
    models, datas, data, settings = rigid_contacts(pm, feet, feet if flat else ())

    def run(q, v, tau):
        pin.constraintDynamics(pm, data, q, v, tau, models, datas, settings)
        pin.computeConstraintDynamicsDerivatives(pm, data, models, datas, settings)
        return data

    return run


def _casadi_error(m, cs, q, v, tau, mu):
    """Max relative error of our contracted second derivatives against CasADi AD."""
    *_, hqq, hvv, hqv, hqt = contact_dynamics_reference(m, cs.contacts)(q, v, tau, mu)
    ours = constrained_second_derivatives(m, cs, q, v, tau, mu)
    err = 0.0
    for got, want in ((ours.d2_dq2, hqq), (ours.d2_dv2, hvv), (ours.d2_dqdv, hqv),
                      (ours.d2_dtaudq, hqt.T)):
        err = max(err, float(np.max(np.abs(got - want)) / max(1.0, np.max(np.abs(want)))))
    return err


def run_contact(T=100, min_time=0.2, log=print):
    """The table of the module docstring -> results/contact_derivatives.{csv,md}."""
    rows = []
    threads = dyn.threads()
    for k, (name, feet, flat) in enumerate(CASES):
        m = robots.load(name)
        kind, gains = (Contact6D, (0.0, 30.0)) if flat else (Contact3D, (0.0, 50.0))
        cs = ContactSet(m, [kind(f, gains=gains) for f in feet])
        plain = ContactSet(m, [kind(f) for f in feet])  # Pinocchio's: no Baumgarte terms
        what = f"{len(feet)} {'flat feet' if flat else 'points'}"
        log(f"contact derivatives: {name} (nv={m.nv}), {what}")
        Q, V, _, TAU = random_states(m, T)
        MU = np.random.default_rng(1).normal(size=(T, m.nv + cs.size))
        pair = (lambda: constrained_derivatives(m, cs, Q, V, TAU),
                lambda: constrained_second_derivatives(m, cs, Q, V, TAU, MU))
        fo, so = (x / T for x in time_us_alternating(pair, 8 * min_time, 20))
        imp = time_us(lambda: impulse_dynamics(m, cs, Q, V, order=1), 3 * min_time, 5) / T
        dyn.set_threads(1)
        try:
            fo1, so1 = (x / T for x in time_us_alternating(pair, 8 * min_time, 20))
        finally:
            dyn.set_threads(threads)
        pin_run = _pinocchio(m, feet, flat)
        n_pin = min(T, 20)
        pin_us = time_us(lambda: [pin_run(Q[t], V[t], TAU[t]) for t in range(n_pin)],
                         min_time) / n_pin
        err = 0.0
        for t in range(3):
            data = pin_run(Q[t], V[t], TAU[t])
            want = [np.array(x) for x in (data.ddq_dq, data.ddq_dv, data.ddq_dtau,
                                          data.dlambda_dq, data.dlambda_dv, data.dlambda_dtau)]
            d = constrained_derivatives(m, plain, Q[t], V[t], TAU[t])
            got = (d.da_dq, d.da_dv, d.da_dtau, d.dlam_dq, d.dlam_dv, d.dlam_dtau)
            err = max(err, max(float(np.max(np.abs(g - w)) / max(1.0, np.max(np.abs(w))))
                               for g, w in zip(got, want)))
        cpp = None
        if m.first_joints is None:  # a cut robot has no URDF of its own
            cpp = pinocchio_cpp.contact_timing(m.urdf_path, feet, feet if flat else (), log=log)
        err_cas = None
        if k in CASADI_CASES:
            t0 = time.perf_counter()
            err_cas = _casadi_error(m, cs, Q[0], V[0], TAU[0], MU[0])
            log(f"  CasADi reference: {time.perf_counter() - t0:.1f} s")
        rows.append(dict(robot=name, nv=m.nv, contacts=what, fo_us=fo, fo_1t_us=fo1,
                         pin_us=pin_us, fo_vs_pin=ratio(fo, pin_us), cpp_us=cpp,
                         fo_vs_cpp=ratio(fo, cpp), fo1_vs_cpp=ratio(fo1, cpp), so_us=so,
                         so_vs_fo=ratio(so, fo), so_1t_us=so1, so1_vs_fo1=ratio(so1, fo1),
                         impact_us=imp, err_pin=err,
                         err_casadi=err_cas))
    notes = [f"batch: T = {T} knots, time per knot, parallel over knots on {threads} threads "
             f"({os.cpu_count()} cores) unless '1 thread'; the minimum over rounds of a noisy "
             f"shared machine, the first and second order's rounds taking turns",
             "first order: the KKT contact dynamics (a, lam) and their derivatives in (q, v, "
             "tau); point contacts (Contact3D) with Baumgarte gains (0, 50) as Crocoddyl's "
             "quadruped examples, flat feet (Contact6D, Pinocchio's CONTACT_6D) with (0, 30) "
             "as its biped examples",
             "Pinocchio: 4.1, its Python binding knot by knot (constraintDynamics then "
             "computeConstraintDynamicsDerivatives, proximal settings 1 iteration, no "
             "Baumgarte terms), the binding's call costs included; and the same two calls in "
             "C++ (problems/reference/pinocchio_contacts_bench.cpp, -O3 -march=native, one "
             "thread, header-only Pinocchio 4.1 of the pin wheel), when the C++ reference "
             "tool is built (soddp bench --build-cpp); none for Talos's legs, a cut robot",
             "second order: the derivatives of mu . (a, lam) on (q, q), (v, v), (q, v), "
             "(tau, q) for a co-state mu over both outputs, no n^3 tensor formed",
             "errors: max |ours - reference| / max(1, max |reference|) over the blocks; "
             "Pinocchio's on 3 knots without Baumgarte terms, CasADi's on one knot with them"]
    write_table(rows, "contact_derivatives", "Contact dynamics derivatives: time per knot and "
                "accuracy", COLUMNS, notes, log)
    return rows
