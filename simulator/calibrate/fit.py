"""Fit constants to measurement rows: bounded robust least squares on relative error.

Residual of row i (measured ``y_i``, prediction ``f_i(x)``, weight ``w_i``): the relative
error on a log scale,

    r_i(x) = sqrt(w_i) * ln(f_i(x) / y_i)        (= f_i/y_i - 1 to first order)

The log makes over- and under-prediction by the same factor cost the same: with
``f/y - 1`` an under-prediction costs at most 1 however bad, so rows far off (an nccl-tests
log's small sizes) would pull a fit towards predicting everything near zero. The report
still shows ``f/y - 1``. Minimised with :func:`scipy.optimize.least_squares` (trust-region
reflective, the parameters' schema bounds, ``loss='soft_l1'`` with ``f_scale`` :data:`F_SCALE`: a row off by
more than ~10% weighs less than quadratically, so one badly modelled row cannot drag every
constant; forward-difference Jacobian with relative step :data:`DIFF_STEP`).

Before fitting, the rows must determine the constants: at least as many rows as constants,
and, with ``J`` the Jacobian of ``r`` with respect to the *relative* change of each constant
(column j multiplied by the constant's scale: |x_j|, or for a constant starting at 0 the
width of the bounds given with ``NAME=LO:HI``, else 1 in its unit), every unit direction ``v``
must move the predictions:
``||J v|| / sqrt(m) >= SENSITIVITY_FLOOR`` (a 100% change along ``v`` moves them by at
least 0.1% rms). The smallest singular value of ``J`` is that minimum; when it is too small,
the constants with weight >= 0.2 in its right-singular vector are named (one constant the
rows do not depend on, or several that move the predictions together) and the fit is
refused (:class:`~simulator.errors.UsageError`, exit 2).

Uncertainty: the Gauss-Newton covariance of plain least squares at the solution,
``cov = s^2 (J^T J)^-1`` with ``s^2 = sum r_i^2 / (m - n)`` the residual variance (m rows,
n constants) and J the Jacobian of the (weighted) residuals, both over the rows that some
constant moves (a row no constant affects says nothing about them); the reported uncertainty
is ``sqrt(diag(cov))`` (one standard deviation; NaN when m = n, inf for a constant no row
depends on at the solution, e.g. a link that stopped being the bottleneck). It ignores the robust loss's
down-weighting and assumes the residuals are independent noise, so read it as the spread
the data allow, not as a guarantee.

Generalisation: each fitted row is also predicted by a fit that did not see it, leave-one-out
up to :data:`LOO_MAX_ROWS` rows, else k-fold (k = 5, row i in fold i mod k); each refit starts
from the full fit. Rows given only as checks are never fitted: their before/after error shows
how the calibration transfers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from simulator.calibrate.params import Parameter, overlay_mapping
from simulator.calibrate.predict import Predictor
from simulator.calibrate.rows import Measurement
from simulator.config import HardwareLibrary
from simulator.errors import UsageError

F_SCALE = 0.1
DIFF_STEP = 1e-4
SENSITIVITY_FLOOR = 1e-3
LOO_MAX_ROWS = 12
FOLDS = 5
MAX_EVALUATIONS = 100


@dataclass(frozen=True)
class Calibration:
    """The outcome of :func:`calibrate_rows`.

    Arrays over ``rows + checks`` (fitted rows first): ``measured``, ``before`` (library
    predictions), ``after`` (fitted). ``held_out`` covers the fitted rows only: each row's
    prediction by the fold that left it out (NaN if that fold had too few rows).
    """

    parameters: list[Parameter]
    fitted: np.ndarray
    uncertainty: np.ndarray
    rows: list[Measurement]
    checks: list[Measurement]
    measured: np.ndarray
    before: np.ndarray
    after: np.ndarray
    held_out: np.ndarray
    cross_validation: str
    evaluations: int
    message: str

    @property
    def fit_count(self) -> int:
        return len(self.rows)

    def errors(self, which: str) -> np.ndarray:
        """predicted / measured - 1 of ``before``, ``after`` (all rows) or ``held_out``
        (fitted rows)."""
        predicted = getattr(self, which)
        return predicted / self.measured[: len(predicted)] - 1.0

    def mape(self, which: str, part: str = "fit") -> float:
        """Mean |error| of ``which`` over the fitted rows (``part='fit'``) or the checks."""
        errors = self.errors(which)
        chosen = errors[: self.fit_count] if part == "fit" else errors[self.fit_count:]
        chosen = chosen[np.isfinite(chosen)]
        return float(np.mean(np.abs(chosen))) if chosen.size else float("nan")

    def overlay(self, library: HardwareLibrary) -> dict:
        """The overlay mapping that applies the fitted values (6 significant digits)."""
        values = [float(f"{v:.6g}") for v in self.fitted]
        return overlay_mapping(self.parameters, values, library)


def calibrate_rows(rows: Sequence[Measurement], parameters: Sequence[Parameter],
                   library: HardwareLibrary | None = None, checks: Sequence[Measurement] = (),
                   folds: int | None = None) -> Calibration:
    """Fit ``parameters`` to ``rows`` (see the module docstring); ``checks`` are predicted
    before and after but not fitted.

    Raises
    ------
    UsageError
        When the rows cannot determine the parameters (naming them), or no rows/parameters.
    """
    library = library or HardwareLibrary()
    rows, checks, params = list(rows), list(checks), list(parameters)
    if not rows or not params:
        raise UsageError("nothing to fit: give measurement rows and at least one constant")
    problem = _Problem(Predictor([*rows, *checks], library), params, library,
                       np.array([r.measured for r in [*rows, *checks]]),
                       np.sqrt([r.weight for r in [*rows, *checks]]))
    fit_rows = list(range(len(rows)))
    problem.check_identifiable(fit_rows)
    solution = problem.solve(fit_rows, np.array([p.start for p in params]))
    every = list(range(len(rows) + len(checks)))
    held_out, method = problem.cross_validate(fit_rows, solution.x, folds)
    return Calibration(params, solution.x, problem.uncertainty(fit_rows, solution.x), rows, checks,
                       problem.measured, problem.predict(None, every),
                       problem.predict(solution.x, every), held_out, method,
                       problem.predictor.evaluations, str(solution.message))


@dataclass
class _Problem:
    predictor: Predictor
    params: list[Parameter]
    library: HardwareLibrary
    measured: np.ndarray
    root_weight: np.ndarray

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return np.array([p.lower for p in self.params]), np.array([p.upper for p in self.params])

    @property
    def scale(self) -> np.ndarray:
        return np.array([p.scale for p in self.params])

    def predict(self, x: np.ndarray | None, indices: Sequence[int]) -> np.ndarray:
        """Predictions at ``x`` (None: the library unchanged)."""
        overlay = {} if x is None else overlay_mapping(self.params, x, self.library)
        return self.predictor.predict(overlay, indices)

    def residuals(self, x: np.ndarray, indices: Sequence[int]) -> np.ndarray:
        idx = list(indices)
        return self.root_weight[idx] * np.log(self.predict(x, idx) / self.measured[idx])

    def jacobian(self, x: np.ndarray, indices: Sequence[int]) -> np.ndarray:
        """Forward differences of :meth:`residuals`, stepping inward at an upper bound."""
        base = self.residuals(x, indices)
        lower, upper = self.bounds
        columns = []
        for j, step in enumerate(DIFF_STEP * self.scale):
            step = -step if x[j] + step > upper[j] else step
            moved = x.copy()
            moved[j] += step
            columns.append((self.residuals(moved, indices) - base) / step)
        return np.column_stack(columns)

    def check_identifiable(self, indices: Sequence[int]) -> None:
        """Refuse (UsageError) constants the rows cannot determine; see the module docstring."""
        names = [p.name for p in self.params]
        if len(indices) < len(names):
            raise UsageError(f"{len(names)} constants need at least {len(names)} measurement rows, "
                             f"got {len(indices)}; free fewer of: {', '.join(names)}")
        x0 = np.array([p.start for p in self.params])
        relative = self.jacobian(x0, indices) * self.scale
        _, singular, vt = np.linalg.svd(relative, full_matrices=False)
        floor = SENSITIVITY_FLOOR * np.sqrt(len(indices))
        if singular[-1] >= floor:
            return
        weights = np.abs(vt[-1])
        culprits = [n for n, w in zip(names, weights, strict=True) if w >= 0.2]
        what = ("the rows barely depend on it" if len(culprits) == 1 else
                "they move the predictions together")
        advice = "free fewer constants or add rows that depend on them"
        if len(culprits) == 1 and not any(p.start or p.given_bounds for p in self.params
                                          if p.name == culprits[0]):
            advice = f"it starts at 0: give its range as {culprits[0]}=LO:HI"
        moved = singular[-1] / np.sqrt(len(indices))
        raise UsageError(f"the measurements cannot determine {', '.join(culprits)}: {what} "
                         f"(a 100% change moves the predictions by {moved:.1e} rms); {advice}")

    def solve(self, indices: Sequence[int], x0: np.ndarray, max_evaluations: int = MAX_EVALUATIONS):
        lower, upper = self.bounds
        return least_squares(self.residuals, np.clip(x0, lower, upper), args=(list(indices),),
                             bounds=(lower, upper), method="trf", loss="soft_l1", f_scale=F_SCALE,
                             x_scale=self.scale, diff_step=DIFF_STEP, xtol=1e-6, ftol=1e-8,
                             max_nfev=max_evaluations)

    def uncertainty(self, indices: Sequence[int], x: np.ndarray) -> np.ndarray:
        """One standard deviation per constant, ``sqrt(diag(s^2 (J^T J)^-1))``, over the rows
        some constant moves (the others say nothing about the constants); NaN when no residual
        degree of freedom is left, inf for a constant no row depends on at ``x``."""
        jac = self.jacobian(x, indices)
        informative = np.any(jac != 0.0, axis=1)
        jac = jac[informative]
        residuals = self.residuals(x, indices)[informative]
        dof = len(residuals) - len(self.params)
        if dof <= 0:
            return np.full(len(self.params), np.nan)
        variance = float(np.sum(residuals ** 2)) / dof
        sigma = np.sqrt(np.clip(np.diag(np.linalg.pinv(jac.T @ jac)) * variance, 0.0, None))
        return np.where(np.any(jac != 0.0, axis=0), sigma, np.inf)

    def cross_validate(self, indices: Sequence[int], x: np.ndarray, folds: int | None
                       ) -> tuple[np.ndarray, str]:
        """Held-out predictions of every fitted row, and the method's name."""
        m = len(indices)
        if m < 2:
            raise UsageError(f"{m} measured row to fit: cross-validation holds rows out, so a fit "
                             "needs at least 2 (add rows to the CSV or the --set selection)")
        if folds is not None and folds < 2:
            raise UsageError(f"--folds must be at least 2 (got {folds})")
        k = min(folds or (m if m <= LOO_MAX_ROWS else FOLDS), m)
        method = "leave-one-out" if k == m else f"{k}-fold"
        held = np.full(m, np.nan)
        for fold in range(k):
            test = [i for n, i in enumerate(indices) if n % k == fold]
            train = [i for n, i in enumerate(indices) if n % k != fold]
            if len(train) < len(self.params):
                continue
            refit = self.solve(train, x, MAX_EVALUATIONS // 2)
            held[[indices.index(i) for i in test]] = self.predict(refit.x, test)
        return held, method
