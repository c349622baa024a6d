"""What an E-DOEBE predicts with during its warm-up (both tasks), and the window it keeps.

Until its window is full, an E-DOEBE has no members yet; it still predicts every sample, one
step ahead, from the first one on, with a fallback that learns as the samples arrive. The
fallback is a small Bayesian model average of two predictors that need no hyperparameters:

- a **linear** member: Bayesian linear regression of the target on the inputs (regression), or
  Bayesian logistic regression of the label (classification, Laplace-filtered like
  :class:`river_doebe.DOBEClassifier`), both on inputs standardised with the statistics of the
  samples seen so far (prior variance 1 on the weights);
- a **nearest-neighbour** member: the ``k`` samples of the window nearest in those standardised
  inputs; for regression the Gaussian with their mean and (inflated) spread, for classification
  their smoothed label frequency ``(n_1 + 1/2) / (k + 1)``. It captures what a linear model cannot
  in the first samples (the banana's boundary), where the E-DOEBE's members, fitted later, will.

Their weights are updated by each member's one-step-ahead predictive density of the target (BMA)
with a fixed share ``share`` of the weight redistributed every step, so that the lead can pass
from one to the other as the window grows. Its predictive is the mixture: two Gaussians, or the
mixed probability.

The input statistics (and, for regression, the target's and the cross-moments the linear
regression is recomputed from at every step) are kept in units of a power of two per input near
its largest magnitude so far, rescaled exactly when that grows, so that inputs of any scale
(1e-150 or 1e150) neither overflow nor underflow.

A sample may lack inputs (NaN in its array: the E-DOEBE's schema marks a missing key so). The
fallback follows the rule of the standardisation frozen at the end of the warm-up
(:class:`river_doebe.warmup.standardise.Standardizer`) with its running statistics: an input
present in at least ``DENSE_PRESENCE`` of the samples so far and not constant over its present
values is dense, and a missing value of it is imputed at the mean of its present values; any
other input's missing value is 0 (an absent sparse feature). New inputs can join
(:meth:`Fallback.grow`): they were absent from the past samples (0 in the statistics, missing in
the window).
"""

from __future__ import annotations

import math

import numpy as np

from river_doebe.basis import Linear
from river_doebe.engine import LogisticEngine, Member

__all__ = ["Fallback"]

#: a spread below this fraction of a column's mean is rounding: the column is constant
CONSTANT = 1e-12

#: an input present in at least this fraction of the samples (and not constant over its present
#: values) is *dense*: a missing value of it means "at its mean"; any other input is *sparse*:
#: absent means 0. The rule of the fallback (see the module's docstring) and of the
#: standardisation the warm-up freezes (:class:`river_doebe.warmup.standardise.Standardizer`);
#: the value comes from the measurements of ``benchmarks/sparse.py`` (README, "Input policy")
DENSE_PRESENCE = 0.99

#: the power-of-two unit of an input (or target) that has only been 0 so far
_UNSET = np.iinfo(np.int64).min

_LOG_2PI = math.log(2.0 * math.pi)

#: from this many inputs the linear member solves the smaller of its two systems on one BLAS
#: thread (see Fallback._wide_posterior); below, its numbers are those of the D x D form as ever
WIDE = 64

_BLAS = None


def _one_blas_thread():
    """A context with BLAS on one thread (a controller built once: ``threadpool_limits`` looks
    the libraries up again on every call, about a millisecond)."""
    global _BLAS
    if _BLAS is None:
        import scipy.linalg  # noqa: F401 - its BLAS (its own build, in wheels) must be loaded
        from threadpoolctl import ThreadpoolController

        _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")


class _Moments:
    """Running means and (co)variances of the inputs, and of a real target, at any scale."""

    def __init__(self, n_inputs: int):
        self.n = 0
        self.ex = np.full(n_inputs, _UNSET, dtype=np.int64)  # x is kept as x * 2**-ex
        self.ey = _UNSET
        self.mx = np.zeros(n_inputs)
        self.Cxx = np.zeros((n_inputs, n_inputs))
        self.cxy = np.zeros(n_inputs)
        self.my = 0.0
        self.syy = 0.0
        self._presence(n_inputs)

    def _presence(self, n_inputs: int) -> None:
        """The statistics of each input's present values: how many samples had it, their mean
        (in the input's unit) and their range (is it constant whenever present?)."""
        self.kx = np.zeros(n_inputs, dtype=np.int64)
        self.px = np.zeros(n_inputs)
        self.lo = np.full(n_inputs, np.inf)
        self.hi = np.full(n_inputs, -np.inf)

    def grow(self, n_inputs: int) -> None:
        k = n_inputs - self.mx.shape[0]
        self.ex = np.r_[self.ex, np.full(k, _UNSET, dtype=np.int64)]
        self.mx = np.r_[self.mx, np.zeros(k)]
        self.cxy = np.r_[self.cxy, np.zeros(k)]
        self.Cxx = np.pad(self.Cxx, ((0, k), (0, k)))
        self.kx = np.r_[self.kx, np.zeros(k, dtype=np.int64)]
        self.px = np.r_[self.px, np.zeros(k)]
        self.lo = np.r_[self.lo, np.full(k, np.inf)]
        self.hi = np.r_[self.hi, np.full(k, -np.inf)]

    def impute(self, X: np.ndarray) -> np.ndarray:
        """``X`` (``(D,)`` or ``(n, D)``) with each missing value (NaN) replaced: by the mean of
        the input's present values if it is dense so far, else by 0."""
        missing = np.isnan(X)
        if not missing.any():
            return X
        dense = (self.kx >= DENSE_PRESENCE * self.n) & (self.hi > self.lo)
        ex, _ = self.units()
        value = np.where(dense, np.ldexp(self.px, ex), 0.0)
        return np.where(missing, np.broadcast_to(value, X.shape), X)

    def _count_present(self, z: np.ndarray, present: np.ndarray) -> None:
        """Add the present values of ``z`` to the presence statistics (after the units moved)."""
        ex, _ = self.units()
        self.kx += present
        k = np.maximum(self.kx, 1)
        self.px += np.where(present, (np.ldexp(np.where(present, z, 0.0), -ex) - self.px) / k, 0.0)
        self.lo = np.where(present, np.fmin(self.lo, z), self.lo)
        self.hi = np.where(present, np.fmax(self.hi, z), self.hi)

    def units(self) -> tuple[np.ndarray, int]:
        return np.where(self.ex == _UNSET, 0, self.ex), (0 if self.ey == _UNSET else self.ey)

    def _rescale(self, z: np.ndarray, y: float) -> None:
        """Move the units to ``(z, y)``'s magnitudes (exact): an input's unit is set by its first
        non-zero value and raised when a value exceeds it by more than ``2**8``."""
        _, ex = np.frexp(z)
        nonzero = z != 0
        # an input whose values were all 0 so far has all-zero statistics: its unit is set by its
        # first non-zero value with nothing to rescale (whatever that value's exponent, 0
        # included: an unset unit must not be mistaken for 2**0 once statistics depend on it)
        first = nonzero & (self.ex == _UNSET)
        if first.any():
            self.ex = np.where(first, ex, self.ex)
        shift = np.where(nonzero & ~first, np.maximum(ex - self.ex - 8, 0), 0)
        if shift.any():
            self.ex = self.ex + shift
            self.mx = np.ldexp(self.mx, -shift)
            self.px = np.ldexp(self.px, -shift)
            self.cxy = np.ldexp(self.cxy, -shift)
            self.Cxx = np.ldexp(np.ldexp(self.Cxx, -shift[:, None]), -shift[None, :])
        if y != 0:
            _, ey = math.frexp(y)
            if self.ey == _UNSET:
                self.ey = ey
            elif ey - self.ey > 8:
                dy = ey - self.ey
                self.ey = ey
                self.my = math.ldexp(self.my, -dy)
                self.syy = math.ldexp(self.syy, -2 * dy)
                self.cxy = np.ldexp(self.cxy, -dy)

    def add(self, z: np.ndarray, y: float) -> None:
        present = ~np.isnan(z)
        z = self.impute(z)  # (with the statistics before this sample)
        self._rescale(z, y)
        self._count_present(z, present)
        ex, ey = self.units()
        zs, ys = np.ldexp(z, -ex), math.ldexp(y, -ey)
        self.n += 1
        dx = zs - self.mx
        dy = ys - self.my
        self.mx += dx / self.n
        self.my += dy / self.n
        self.Cxx += np.outer(dx, zs - self.mx)
        self.cxy += dx * (ys - self.my)
        self.syy += dy * (ys - self.my)

    def x_scale(self) -> np.ndarray:
        """Each input's standard deviation in its unit (``inf`` for a constant one)."""
        sx = np.sqrt(np.maximum(np.diag(self.Cxx) / max(self.n, 1), 0.0))
        sx[~(sx > CONSTANT * np.abs(self.mx))] = np.inf
        return sx

    def standardise(self, X: np.ndarray) -> np.ndarray:
        """Inputs ``(D,)`` or ``(n, D)`` with the statistics so far, clipped to ``+-1e3`` (a
        constant input is 0; a missing value is imputed first, see :meth:`impute`)."""
        ex, _ = self.units()
        X = self.impute(X[..., : self.mx.shape[0]])
        u = (np.ldexp(X, -ex) - self.mx) / self.x_scale()
        return np.clip(u, -1e3, 1e3)


class Fallback:
    """The warm-up predictor of an E-DOEBE (see the module's docstring), and its window.

    Parameters
    ----------
    n_inputs
        The number of inputs (more can join with :meth:`grow`).
    task
        ``"regression"`` (targets are real numbers) or ``"classification"`` (label codes 0/1).
    k
        Neighbours of the nearest-neighbour member.
    share
        Weight redistributed between the two members at every step.
    """

    #: (defaults for fallbacks pickled before the window could restart)
    restarts = 0
    _wait_for: float | None = None

    def __init__(self, n_inputs: int, task: str = "regression", k: int = 5, share: float = 0.01):
        if task not in ("regression", "classification"):
            raise ValueError(f"task must be 'regression' or 'classification', got {task!r}")
        self.task = task
        self.k = k
        self.share = share
        self.n = 0
        self.keep_window = True
        #: how many times the window restarted (:meth:`restart_window`)
        self.restarts = 0
        self._wait_for = None
        self._X = np.zeros((16, n_inputs))  # the window's rows, with room to grow
        self._y: list = []
        self._moments = _Moments(n_inputs)
        self.log_w = np.full(2, -math.log(2.0))
        self.log_evidence = 0.0
        self._cache = None
        if task == "classification":
            self._logistic = LogisticEngine([Member(Linear(), 1.0, 0.0)])
            self._logistic.setup(n_inputs)
        else:
            self._sq_err = 0.0
            self._n_err = 0
            self._post = None

    @classmethod
    def from_window(cls, X: np.ndarray, y, task: str = "regression") -> Fallback:
        """A fallback that holds the window ``(X, y)`` (regression targets or label codes), for
        a warm-up from a history: its statistics, not its one-step-ahead scores."""
        fb = cls(X.shape[1], task)
        for z, t in zip(np.asarray(X, dtype=np.float64), y):
            fb._keep(z, t)
        return fb

    # ------------------------------------------------------------------ window
    @property
    def n_inputs(self) -> int:
        return self._X.shape[1]

    @property
    def n_updates(self) -> int:
        """How many samples the fallback has learnt (the engine's name for it)."""
        return self.n

    def grow(self, n_inputs: int) -> None:
        """Take ``n_inputs`` inputs; the new ones last, absent from every past sample (0 in the
        running statistics, missing in the window)."""
        self._moments.grow(n_inputs)
        n = len(self._y)
        X = np.pad(self._X, ((0, 0), (0, n_inputs - self._X.shape[1])))
        X[:n, self._X.shape[1]:] = np.nan
        self._X = X
        if self.task == "classification":
            self._logistic.grow(n_inputs)
        else:
            self._post = None
        self._cache = None

    @property
    def n_window(self) -> int:
        """How many samples the window holds (all learnt so far, unless it restarted)."""
        return len(self._y)

    def restart_window(self, value: float) -> None:
        """Empty the window and keep learning (the running statistics and the members are
        kept), and keep no sample in it until a target differs from ``value``: an E-DOEBE
        whose window's target was constant (``value``) waits for samples that vary."""
        self._X[:] = 0.0
        self._y = []
        self._wait_for = value
        self._cache = None
        if self.task == "regression":
            self._post = None
        self.restarts += 1

    def drop_window(self) -> None:
        """Stop keeping the samples (the warm-up was given up: the fallback is the model)."""
        self.keep_window = False
        self._X, self._y = np.zeros((0, self._X.shape[1])), []

    def window(self) -> tuple[np.ndarray, np.ndarray]:
        """The samples kept, as ``(X, targets)``; a sample that lacked an input (an input that
        joined later, in the earlier rows) holds NaN there."""
        dtype = np.int64 if self.task == "classification" else np.float64
        return self._X[: len(self._y)].copy(), np.asarray(self._y, dtype=dtype)

    def flip(self) -> None:
        """The label codes 0 and 1 swap meaning (a second label arrived and sorts first)."""
        self._logistic.flip()
        self._y = [1 - c for c in self._y]
        self._cache = None

    # ------------------------------------------------------------------ the members
    def _neighbours(self, z: np.ndarray) -> np.ndarray | None:
        """Indices of the ``k`` nearest samples of the window in standardised inputs."""
        n = len(self._y)
        if n == 0 or not self.keep_window:
            return None
        U = self._moments.standardise(self._X[:n])
        d = np.sum((U - self._moments.standardise(z)) ** 2, axis=1)
        kk = min(self.k, n)
        return np.argpartition(d, kk - 1)[:kk]

    def _linear_regression(self, z: np.ndarray) -> tuple[float, float]:
        """The linear member's predictive mean and variance in the target's units of the
        moments (``2**ey``)."""
        mo = self._moments
        if mo.n < 2:
            return mo.my, (1.0 if mo.n == 0 else 1.0 + mo.my**2)
        if self._post is None:
            n = mo.n
            inv = 1.0 / mo.x_scale()
            sy = math.sqrt(max(mo.syy / n, 0.0))
            if not sy > CONSTANT * abs(mo.my):
                sy = 1.0
            ve = min(max(self._sq_err / self._n_err, 1e-3), 1.0) if self._n_err else 1.0
            if inv.shape[0] < WIDE:
                A = mo.Cxx * np.outer(inv, inv) / ve
                A[np.diag_indices_from(A)] += 1.0
                b = mo.cxy * inv / (sy * ve)
                self._post = (sy, ve, np.linalg.cholesky(A), np.linalg.solve(A, b))
            else:
                with _one_blas_thread():
                    self._post = self._wide_posterior(inv, sy, ve)
        if len(self._post) == 3:
            return self._wide_predictive(z)
        sy, ve, chol, w = self._post
        u = mo.standardise(z)
        h = np.linalg.solve(chol, u)
        return mo.my + sy * float(u @ w), sy * sy * (float(h @ h) + ve)

    # Wide inputs (D >= WIDE): the posterior of the weights, A = I + U'U / ve with U the n x D
    # centred, standardised window, costs O(D^3) a sample in the D x D form above (and its LU
    # solves); while the window holds fewer samples than about half the inputs, the n x n form
    # (Woodbury: A^-1 = I - U'(ve I + UU')^-1 U) costs O(n^2 D), linear in D. Either way one
    # Cholesky factor and triangular solves, on one BLAS thread (a factorisation this size on
    # several threads of a busy machine waits for them: ten times slower).

    def _wide_posterior(self, inv: np.ndarray, sy: float, ve: float) -> tuple:
        from scipy import linalg  # wide inputs only: the package loads without scipy.linalg

        mo = self._moments
        n, D = mo.n, inv.shape[0]
        if self.keep_window and len(self._y) == n and 2 * n < D:
            U = mo.standardise(self._X[:n])
            _, ey = mo.units()
            yc = np.ldexp(np.asarray(self._y, dtype=np.float64), -ey) - mo.my
            K = U @ U.T
            K[np.diag_indices_from(K)] += ve
            L = linalg.cholesky(K, lower=True, check_finite=False)
            w = U.T @ linalg.cho_solve((L, True), yc, check_finite=False) / sy
            return sy, ve, ("dual", U, L, w)
        A = mo.Cxx * np.outer(inv, inv) / ve
        A[np.diag_indices_from(A)] += 1.0
        L = linalg.cholesky(A, lower=True, check_finite=False)
        w = linalg.cho_solve((L, True), mo.cxy * inv / (sy * ve), check_finite=False)
        return sy, ve, ("primal", None, L, w)

    def _wide_predictive(self, z: np.ndarray) -> tuple[float, float]:
        from scipy import linalg

        sy, ve, (form, U, L, w) = self._post
        u = self._moments.standardise(z)
        with _one_blas_thread():
            if form == "dual":
                g = linalg.solve_triangular(L, U @ u, lower=True, check_finite=False)
                q = max(float(u @ u) - float(g @ g), 0.0)  # u' A^-1 u
            else:
                h = linalg.solve_triangular(L, u, lower=True, check_finite=False)
                q = float(h @ h)
        return self._moments.my + sy * float(u @ w), sy * sy * (q + ve)

    def _members(self, z: np.ndarray):
        """Both members' predictives for ``z``, cached for the ``learn`` that follows: for
        regression ``(means, variances)`` in the moments' target unit, for classification the
        probabilities of code 1."""
        key = z.tobytes()
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        near = self._neighbours(z)
        if self.task == "classification":
            p_lin = self._logistic.predict_proba(self._moments.standardise(z))[1]
            if near is None:
                out = np.array([p_lin, 0.5])
            else:
                ones = float(np.asarray(self._y)[near].sum())
                out = np.array([p_lin, (ones + 0.5) / (near.size + 1.0)])
        else:
            m_lin, v_lin = self._linear_regression(z)
            if near is None or near.size < 2:
                out = (np.array([m_lin, m_lin]), np.array([v_lin, v_lin]))
            else:
                _, ey = self._moments.units()
                t = np.ldexp(np.asarray(self._y)[near], -ey)
                mo = self._moments
                floor = 1e-3 * max(mo.syy / mo.n, 1e-300)
                v = max(float(t.var(ddof=1)), floor) * (1.0 + 1.0 / near.size)
                out = (np.array([m_lin, float(t.mean())]), np.array([v_lin, v]))
        self._cache = (key, out)
        return out

    def _weights(self) -> np.ndarray:
        w = np.exp(self.log_w - self.log_w.max())
        return w / w.sum()

    # ------------------------------------------------------------------ predictions
    def _components(self, z: np.ndarray):
        """Regression: the mixture's ``(weights, means, variances)`` in the target's units."""
        means, variances = self._members(z)
        _, ey = self._moments.units()
        # a variance in the target's units may overflow (a target around 1e200): then inf
        return self._weights(), np.ldexp(means, ey), np.ldexp(variances, 2 * ey)

    def mixture(self, z: np.ndarray):
        """Regression: the predictive mixture ``(weights, means, variances)`` and its
        moment-matched ``(mean, var)``, in the target's units (as
        :meth:`river_doebe.engine.Engine.mixture` gives them)."""
        w, means, variances = self._components(z)
        mean = float(w @ means)
        with np.errstate(over="ignore"):  # a target around 1e200: its variance is inf
            return w, means, variances, mean, float(w @ (variances + (means - mean) ** 2))

    def predict(self, z: np.ndarray) -> tuple[float, float]:
        """Regression: the mixture's mean and variance in the target's units."""
        return self.mixture(z)[3:]

    def predict_proba(self, z: np.ndarray) -> tuple[float, float]:
        """Classification: ``(p(code 0), p(code 1))``."""
        p1 = float(self._weights() @ self._members(z))
        return 1.0 - p1, p1

    def log_density(self, z: np.ndarray, y: float) -> float:
        """Regression: the mixture's log density of ``y`` (target units)."""
        w, means, variances = self._components(z)
        terms = np.log(w) - 0.5 * (_LOG_2PI + np.log(variances) + (y - means) ** 2 / variances)
        top = terms.max()
        return float(top + math.log(np.exp(terms - top).sum()))

    # ------------------------------------------------------------------ learning
    def learn(self, z: np.ndarray, y) -> None:
        """Score ``y`` with both members (weights, evidence), then learn it."""
        if self.task == "classification":
            code = int(y)
            p1 = self._members(z)
            member_ll = np.log(np.where(code == 1, p1, 1.0 - p1))
            self._logistic.learn(self._moments.standardise(z), code)
        else:
            means, variances = self._members(z)
            _, ey = self._moments.units()
            # (inf for a target beyond the float range in the unit so far, a subnormal's: it
            # scores nothing, and the unit moves to it when it is kept)
            with np.errstate(over="ignore"):
                t = float(np.ldexp(float(y), -ey))
            member_ll = -0.5 * (_LOG_2PI + np.log(variances) + (t - means) ** 2 / variances)
            member_ll -= ey * math.log(2.0)  # the density of y, not of y / 2**ey
            if self._moments.n >= 2 and math.isfinite(t):
                self._sq_err += ((t - means[0]) / self._post[0]) ** 2
                self._n_err += 1
        joint = self.log_w + member_ll
        top = joint.max()
        if np.isfinite(top):
            lse = top + math.log(np.exp(joint - top).sum())
            self.log_evidence += lse
            w = np.exp(joint - lse)
            self.log_w = np.log((1.0 - self.share) * w + self.share / 2.0)
        self._keep(z, y)

    def _keep(self, z: np.ndarray, y) -> None:
        """Add ``(z, y)`` to the statistics and the window."""
        c = self._wait_for
        if c is not None and abs(float(y) - c) > CONSTANT * abs(c):  # (the test of a constant)
            self._wait_for = c = None  # the first target that differs: the window starts here
        if self.keep_window and c is None:
            n = len(self._y)
            if n == self._X.shape[0]:
                self._X = np.vstack([self._X, np.zeros_like(self._X)])
            self._X[n, : z.shape[0]] = z
            self._y.append(int(y) if self.task == "classification" else float(y))
        self._moments.add(np.asarray(z, dtype=np.float64),
                          0.0 if self.task == "classification" else float(y))
        self.n += 1
        self._cache = None
        if self.task == "regression":
            self._post = None
