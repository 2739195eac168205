"""External references we measure against, each run outside this package's code:

* :mod:`.pinocchio_cpp`: the C++ Pinocchio timing tool of ``shared/tools`` (built on demand);
* :mod:`.pinocchio_contacts`: Pinocchio's rigid-contact solver on a model's point contacts;
* :mod:`.casadi_contacts`: CasADi's AD of the contact dynamics and the impact map written in SX
  (the second derivatives' reference);
* :mod:`.crocoddyl_solvers`: Crocoddyl's solvers on the same problems, run by a Python that has
  Crocoddyl (``SODDP_CROCODDYL_PYTHON``) on the script beside it (``crocoddyl_problem.py``),
  which rebuilds any of our problems from a JSON description.
"""
