"""Solve a PuLP model with HiGHS (default) or CBC, a time limit and a warm start, and say what the
solver itself said.

PuLP calls a run that stopped at its time limit "Optimal" (``LpStatusOptimal``) whenever it found
a feasible solution; :func:`solve` reads the solver's own status instead — the HiGHS model status,
or the ``Result -`` line of CBC's log — and its primal and dual bounds, from which it computes one
relative gap for both solvers: ``|objective − bound| / max(|objective|, 1e-9)`` (HiGHS's
definition; 0 when proven optimal).

Warm start: give every variable an initial value (``LpVariable.setInitialValue``) before calling
:func:`solve`; HiGHS gets it as a MIP start, CBC through ``warmStart``.

Time: HiGHS's own clock starts once the model has been handed over (seconds on 30 000
binaries), so with a ``deadline`` its limit is set at that moment to what is left of it. With a
``Stall`` HiGHS stops early — status ``stalled`` — when it has found nothing better than a given
objective by a given time (``milp`` hands the rest to neighbourhoods).
"""

from __future__ import annotations

import functools
import re
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

SOLVERS = ("highs", "cbc")
EXACT_GAP = 1e-9  # absolute gap of ``solve(..., exact=True)``
FEASIBLE = (
    "optimal",
    "time_limit",
    "interrupt",
    "iteration_limit",
    "solution_limit",
    "stalled",
)
READ_BACK_S = 2e-5  # seconds per variable to read a HiGHS solution back (kept off the deadline)


@dataclass(frozen=True)
class Stall:
    """Stop HiGHS at ``at`` (a ``time.perf_counter()`` instant) unless it has found a solution
    whose objective is below ``objective`` (less a relative 1e-9) by then — status ``stalled``,
    its incumbent (no better than ``objective``) kept. HiGHS looks at it between its own steps
    (cut rounds, nodes), so the stop comes at the first of them after ``at``. CBC takes no
    callback and ignores it."""

    objective: float
    at: float


@dataclass(frozen=True)
class SolveResult:
    """What the solver said: ``status`` is ``optimal``, ``time_limit`` (feasible, not proven),
    ``infeasible``, ``no_solution`` (stopped before any solution) or the solver's own word."""

    solver: str
    status: str
    objective: float | None
    bound: float | None
    gap: float | None
    seconds: float

    @property
    def feasible(self) -> bool:
        return self.status in FEASIBLE and self.objective is not None


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """``|objective − bound| / max(|objective|, 1e-9)``; None when either is unknown."""
    if objective is None or bound is None or not np.isfinite(objective) or not np.isfinite(bound):
        return None
    return float(abs(objective - bound) / max(abs(objective), 1e-9))


def solve(
    prob: Any,
    solver: str = "highs",
    time_limit_s: float = 30.0,
    threads: int | None = None,
    feasibility_tolerance: float | None = None,
    exact: bool = False,
    options: dict[str, Any] | None = None,
    *,
    deadline: float | None = None,
    stall: Stall | None = None,
) -> SolveResult:
    """Solve ``prob`` (a ``pulp.LpProblem`` with initial values set) within ``time_limit_s``.

    ``solver="highs"`` falls back to CBC when highspy is missing (``SolveResult.solver`` says which
    one ran). ``feasibility_tolerance``: how far a row may be violated (the solvers' defaults,
    up to 1e-6, when None). ``exact``: no relative gap (the solvers stop at 10⁻⁴ by default) and
    an absolute one of 1e-9, and no presolve — for small models whose objective breaks ties by
    amounts far below its own size, and whose rows hold coefficients many orders of magnitude
    apart, on which HiGHS's MIP presolve has reported a suboptimal point as "optimal"
    (``partitions.exact``). ``options``: further HiGHS options by name (ignored by CBC).
    ``deadline`` (a ``time.perf_counter()`` instant): HiGHS's limit becomes what is left of it
    once the model is handed over, less the time to read the solution back, when that is less
    than ``time_limit_s``. ``stall``: :class:`Stall` (HiGHS only).
    Variable values are left in the model as PuLP leaves them.
    """
    import pulp

    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
    if not time_limit_s > 0:
        raise ValueError("a solver needs a time limit > 0")
    started = time.perf_counter()
    if solver == "highs" and pulp.HiGHS().available():
        result = _solve_highs(
            prob, time_limit_s, threads, feasibility_tolerance, exact, options, deadline, stall
        )
    else:
        result = _solve_cbc(prob, time_limit_s, threads, feasibility_tolerance, exact)
    return SolveResult(*result, seconds=time.perf_counter() - started)


def _solve_highs(
    prob: Any,
    time_limit_s: float,
    threads: int | None,
    tolerance: float | None,
    exact: bool,
    extra: dict[str, Any] | None = None,
    deadline: float | None = None,
    stall: Stall | None = None,
) -> tuple:
    import highspy

    options: dict[str, Any] = {"msg": False, "timeLimit": time_limit_s}
    if threads:
        options["threads"] = threads
    if tolerance is not None:
        options["mip_feasibility_tolerance"] = tolerance
        options["primal_feasibility_tolerance"] = tolerance
    if exact:
        options.update(gapRel=0.0, gapAbs=EXACT_GAP, presolve="off")
    options.update(extra or {})
    highs = _warm_highs()(**options)
    highs.deadline, highs.stall, highs.stalled = deadline, stall, False
    prob.solve(highs)
    model = prob.solverModel
    status = model.getModelStatus()
    info = model.getInfo()
    objective = float(info.objective_function_value)
    bound = float(info.mip_dual_bound)
    names = {
        highspy.HighsModelStatus.kOptimal: "optimal",
        highspy.HighsModelStatus.kTimeLimit: "time_limit",
        highspy.HighsModelStatus.kInterrupt: "time_limit",
        highspy.HighsModelStatus.kInfeasible: "infeasible",
        highspy.HighsModelStatus.kUnboundedOrInfeasible: "infeasible",
    }
    name = names.get(status) or model.modelStatusToString(status).lower().replace(" ", "_")
    if highs.stalled and status == highspy.HighsModelStatus.kInterrupt:
        name = "stalled"
    if not np.isfinite(objective) or info.primal_solution_status == 0:
        return "highs", "infeasible" if name == "infeasible" else "no_solution", None, None, None
    bound_or_none = bound if np.isfinite(bound) else None
    gap = 0.0 if name == "optimal" else relative_gap(objective, bound_or_none)
    return "highs", name, objective, bound_or_none, gap


_CBC_RESULTS = {
    "optimal solution found": "optimal",
    "stopped on time": "time_limit",
    "stopped on iterations": "iteration_limit",
    "stopped on solutions": "solution_limit",
    "problem proven infeasible": "infeasible",
    "stopped by user": "interrupt",
}


def _solve_cbc(
    prob: Any, time_limit_s: float, threads: int | None, tolerance: float | None, exact: bool
) -> tuple:
    import pulp

    options = [] if tolerance is None else [f"primalTolerance {tolerance}"]
    gaps = {"gapRel": 0.0, "gapAbs": EXACT_GAP, "presolve": False} if exact else {}
    with tempfile.TemporaryDirectory(prefix="routeplan-cbc-") as folder, warnings.catch_warnings():
        # PuLP 3 warns that its bundled CBC goes away in PuLP 4; pyproject pins PuLP < 4
        warnings.simplefilter("ignore", DeprecationWarning)
        log = Path(folder, "cbc.log")
        prob.solve(
            pulp.PULP_CBC_CMD(
                msg=False,
                timeLimit=time_limit_s,
                warmStart=True,
                logPath=str(log),
                threads=threads,
                options=options,
                **gaps,
            )
        )
        text = log.read_text(errors="replace") if log.is_file() else ""
    return ("cbc", *cbc_outcome(text, prob.sol_status))


def cbc_outcome(log: str, sol_status: int) -> tuple[str, float | None, float | None, float | None]:
    """``(status, objective, bound, gap)`` from CBC's log (``Result - …``, ``Objective value:``,
    ``Lower bound:``); PuLP's ``sol_status`` only when the log has no result line."""
    import pulp

    found = re.search(r"^Result - (.+)$", log, re.MULTILINE)
    text = found.group(1).strip().lower() if found else ""
    status = next((v for k, v in _CBC_RESULTS.items() if text.startswith(k)), None)
    if status is None:
        status = {
            pulp.LpSolutionOptimal: "optimal",
            pulp.LpSolutionIntegerFeasible: "time_limit",
            pulp.LpSolutionInfeasible: "infeasible",
        }.get(sol_status, text.replace(" ", "_") or "no_solution")
    objective = _number(log, "Objective value")
    if status == "infeasible" or sol_status not in (
        pulp.LpSolutionOptimal,
        pulp.LpSolutionIntegerFeasible,
    ):
        return ("infeasible" if status == "infeasible" else "no_solution"), None, None, None
    if status == "optimal":
        return status, objective, objective, 0.0
    bound = _number(log, "Lower bound")
    return status, objective, bound, relative_gap(objective, bound)


def _number(log: str, label: str) -> float | None:
    found = re.search(rf"^{label}:\s+(\S+)", log, re.MULTILINE)
    try:
        return float(found.group(1)) if found else None
    except ValueError:
        return None


@functools.cache
def _warm_highs() -> type:
    """PuLP's HiGHS with these changes: the model goes to HiGHS in two bulk calls (PuLP adds rows
    and columns one call each, seconds on 30 000 binaries) with the objective's constant (PuLP's
    drops it: HiGHS's objective and bound were not the model's), the variables' initial values go
    as a MIP start (PuLP's HiGHS has no warm start), and ``deadline`` and ``stall``
    (:func:`solve`). Built on first use so that pulp loads on demand."""
    import highspy
    import pulp

    class WarmHiGHS(pulp.HiGHS):
        def buildSolverModel(self, lp):  # noqa: N802 (PuLP's name)
            inf = highspy.kHighsInf
            model = lp.solverModel
            variables = lp.variables()
            for i, var in enumerate(variables):
                var.index = i
            n = len(variables)
            sense = -1.0 if lp.sense == pulp.LpMaximize else 1.0
            cost = np.array([sense * lp.objective.get(v, 0.0) for v in variables], dtype=float)
            lower = np.array([-inf if v.lowBound is None else v.lowBound for v in variables])
            upper = np.array([inf if v.upBound is None else v.upBound for v in variables])
            empty = np.zeros(0, dtype=np.int32)
            model.addCols(n, cost, lower, upper, 0, np.zeros(n, np.int32), empty, np.zeros(0))
            if lp.objective.constant:  # PuLP's HiGHS drops it: objectives and bounds are PuLP's
                model.changeObjectiveOffset(sense * lp.objective.constant)
            integer = np.array(
                [v.index for v in variables if v.cat == pulp.LpInteger and self.mip],
                dtype=np.int32,
            )
            if integer.size:
                kinds = np.full(integer.size, highspy.HighsVarType.kInteger)
                model.changeColsIntegrality(integer.size, integer, kinds)
            starts, index, value, row_lower, row_upper = [], [], [], [], []
            for i, constraint in enumerate(lp._constraints.values()):
                constraint.index = i
                starts.append(len(index))
                for var, coefficient in constraint.items():
                    if coefficient != 0:
                        index.append(var.index)
                        value.append(coefficient)
                lo, hi = constraint.getLb(), constraint.getUb()
                row_lower.append(-inf if lo is None else lo)
                row_upper.append(inf if hi is None else hi)
            if row_lower:
                model.addRows(
                    len(row_lower),
                    np.array(row_lower, dtype=float),
                    np.array(row_upper, dtype=float),
                    len(index),
                    np.array(starts, dtype=np.int32),
                    np.array(index, dtype=np.int32),
                    np.array(value, dtype=float),
                )

        deadline: float | None = None
        stall: Stall | None = None
        stalled = False

        def callSolver(self, lp):  # noqa: N802 (PuLP's name)
            model = lp.solverModel
            variables = lp.variables()
            start = highspy.HighsSolution()
            start.col_value = [float(v.varValue or 0.0) for v in variables]
            model.setSolution(start)
            if self.deadline is not None:
                left = self.deadline - time.perf_counter() - READ_BACK_S * len(variables)
                if left < self.timeLimit:
                    model.setOptionValue("time_limit", max(left, 0.01))
            if self.stall is not None:
                model.cbMipInterrupt.subscribe(self._stop_when_stalled)
            super().callSolver(lp)

        def _stop_when_stalled(self, event: Any) -> None:
            stall = self.stall
            if stall is None or time.perf_counter() < stall.at:
                return
            found = event.data_out.mip_primal_bound
            if found < stall.objective - 1e-9 * max(abs(stall.objective), 1.0):
                self.stall = None  # it found better: let it run (one comparison from now on)
                return
            self.stalled = True
            event.interrupt()

    return WarmHiGHS
