"""Iterated posterior linearisation (IPL) of the logistic likelihood: the alternative update step
of the classifiers. Numba.

The update of :mod:`river_doebe.kernels.logistic` is scalar along ``phi``: a member's latent
predictive is ``f ~ N(a, s2)`` and any Gaussian measurement update of ``f`` becomes an update of
its weights ``mu += v t``, ``Sigma_pred -= v v' c`` with ``v = Sigma_pred phi``. The Laplace step
takes ``t`` and the precision ``lam`` from the mode of the one-sample posterior; IPL
(Garcia-Fernandez et al. 2015; Tronarp et al. 2018) takes them from a statistical linear
regression (SLR) of the label on the latent, iterated so that the linearisation is done with
respect to the *posterior* rather than the prior.

**SLR** of ``y`` in {0, 1} (``E[y | f] = sigmoid(f)``, ``Var[y | f] = sigmoid(f) sigmoid(-f)``)
with respect to ``f ~ N(m, P)``::

    ybar = E[sigmoid(f)],   A = Cov(f, sigmoid(f)) / P,   b = ybar - A m,
    Omega = ybar (1 - ybar) - A^2 P      (the variance of y left unexplained by A f + b)

The expectations use Gauss-Hermite quadrature (:data:`NODES`, :data:`WEIGHTS`, fixed at import).

**Iteration.** Start from ``(m, P) = (a, s2)``. The linearised measurement ``y = A f + b + e``,
``e ~ N(0, Omega)``, applied to the *prior* ``N(a, s2)``, gives::

    t   = A (y - A a - b) / (A^2 s2 + Omega)        the gain along v
    lam = A^2 / Omega                               the effective precision
    m'  = a + s2 t,   P' = s2 / (1 + lam s2)

then re-linearise at ``(m', P')``, until the moments change by less than ``1e-12`` (relative) or
after :data:`MAX_ITER` linearisations. The member's update uses the last ``(t, lam)`` exactly as
the Laplace step's: ``c = lam / (1 + lam s2)`` and, for a static member, the measurement-noise
variance ``alpha_0 = 1 / lam = Omega / A^2``.

**Numerics.** The function ``g(f) = sigmoid(+-f)`` is taken with the sign that makes it the
smaller probability at ``m``, so that neither ``Cov(f, g)`` nor ``Omega`` is a small difference of
numbers near 1; ``Omega`` is summed as ``E[g (1 - g)] + E[(g - gbar - (f - m) Cov(f, g) / P)^2]``,
which equals the formula above in exact arithmetic and is never negative. One exponential per
node gives both ``g`` and ``1 - g``. Far in a tail (``g < exp(-600)`` at every node) the sums would
underflow, so ``g`` is scaled by its largest value ``kappa`` at the nodes: ``A / Omega`` and ``t``
come out of the scaled sums, and only ``lam = A (A / Omega)`` may underflow (to 0: the covariance
stays, the mean still moves, as for the Laplace step). For ``P`` tiny (an all-zero feature
vector, or a member that is nearly certain) ``Cov(f, g) / P`` loses its digits, and ``A`` is taken
from Stein's identity ``A = E[sigmoid'(f)]`` instead, which is its limit; ``s2 = 0`` gives the
Laplace step's ``t = y - sigmoid(a)``.

Cost: at most :data:`MAX_ITER` linearisations of 32 nodes each, independent of ``F``, so the
member's update stays ``O(F^2)``; the iteration converges linearly, in 3-10 linearisations.

References
----------
[^1]: Garcia-Fernandez, A. F., Svensson, L., Morelande, M. R. and Sarkka, S. (2015). Posterior
    linearization filter: principles and implementation using sigma points. IEEE Transactions on
    Signal Processing, 63(20), 5561-5573.
[^2]: Tronarp, F., Garcia-Fernandez, A. F. and Sarkka, S. (2018). Iterative filtering and
    smoothing in nonlinear and non-Gaussian systems using conditional moments. IEEE Signal
    Processing Letters, 25(3), 408-412.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.polynomial.hermite_e import hermegauss

from river_doebe.kernels.jit import kernel

__all__ = ["MAX_ITER", "NODES", "WEIGHTS", "solve_ipl_step", "slr"]

#: Gauss-Hermite nodes and weights for ``E[h(m + sqrt(P) z)]``, ``z ~ N(0, 1)`` (probabilists'
#: Hermite polynomials; the weights normalised to sum to 1)
NODES, _W = hermegauss(32)
WEIGHTS = _W / _W.sum()

#: the most linearisations of one step (each costs 2 x 32 sigmoids, nothing of size F)
MAX_ITER = 10

#: relative change of the latent moments below which the iteration has settled
_RTOL = 1e-12

#: below this standard deviation of the latent, ``Cov(f, g) / P`` is taken by Stein's identity
_SMALL_SD = 1e-3

#: the least unexplained variance (relative to ``kappa``): keeps ``A / Omega`` finite
_OMEGA_FLOOR = 1e-300

#: below this log g at every node the probabilities are scaled by ``kappa`` (else ``kappa = 1``):
#: ``exp(-600)`` is still a normal number, so the unscaled sums keep their digits above it
_TAIL = -600.0


@kernel()
def slr(m, P, y, nodes, weights, g, h):
    """The SLR of the label at ``N(m, P)``, scaled: ``(A, R, d)`` with the slope ``A``, the ratio
    ``R = A / Omega`` and ``d = y - ybar``, each computed without cancellation or overflow.
    ``g``, ``h`` are scratch of the nodes' size (``g / kappa`` and ``1 - g`` at each node)."""
    r = math.sqrt(P)
    s = 1.0 if m <= 0.0 else -1.0  # g(f) = sigmoid(s f) is at most 1/2 at the mean
    n = nodes.shape[0]
    top = -np.inf
    for i in range(n):
        x = s * (m + r * nodes[i])
        if x > top:
            top = x
    deep = top < _TAIL  # every g below exp(-600): sigmoid(x) = exp(x) to the last bit there
    kappa = math.exp(top) if deep else 1.0
    gbar = 0.0  # E[g] / kappa
    gz = 0.0  # E[z g] / kappa = Cov(f, g) / (kappa sqrt(P))
    gd = 0.0  # E[g (1 - g)] / kappa = E[sigmoid'(f)] / kappa
    for i in range(n):
        x = s * (m + r * nodes[i])
        if deep:
            g[i] = math.exp(x - top)
            h[i] = 1.0
        else:
            # one exponential gives both probabilities, each without cancellation
            e = math.exp(-abs(x))
            q = 1.0 / (1.0 + e)
            if x >= 0.0:
                g[i], h[i] = q, e * q
            else:
                g[i], h[i] = e * q, q
        w = weights[i]
        gbar += w * g[i]
        gz += w * nodes[i] * g[i]
        gd += w * g[i] * h[i]
    # Cov(f, g) / (kappa sqrt(P)); for a tiny P by Stein's identity, Cov(f, g) = P E[g'(f)]
    small = r < _SMALL_SD
    slope = s * r * gd if small else gz
    resid = 0.0  # E[(g - gbar - (f - m) Cov(f, g) / P)^2] / kappa^2
    for i in range(n):
        e = g[i] - gbar - slope * nodes[i]
        resid += weights[i] * e * e
    omega = max(gd + kappa * resid, _OMEGA_FLOOR)  # Omega / kappa
    # the slope of sigmoid(f) = s times that of g (sigmoid(-f) = 1 - sigmoid(f))
    a_scaled = gd if small else s * gz / r  # A / kappa
    A = kappa * a_scaled
    R = a_scaled / omega
    # y - ybar with ybar = E[sigmoid(f)]: kappa gbar when s = 1, else 1 - kappa gbar
    gb = kappa * gbar
    if s > 0.0:
        d = (1.0 - gb) if y == 1 else -gb
    else:
        d = gb if y == 1 else -(1.0 - gb)
    return A, R, d


@kernel(allocates=True)
def solve_ipl_step(a, s2, y, nodes, weights):
    """The IPL step of a member with latent predictive ``N(a, s2)`` and label ``y`` (0 or 1):
    ``(t, lam)`` as :func:`river_doebe.kernels.logistic.solve_laplace_step` returns them."""
    n = nodes.shape[0]
    g = np.empty(n)
    h = np.empty(n)
    m, P = a, s2
    t, lam = 0.0, 0.0
    for _ in range(MAX_ITER):
        A, R, d = slr(m, P, y, nodes, weights, g, h)
        lam = A * R
        # y - A a - b = (y - ybar) - A (a - m)
        t = R * (d - A * (a - m)) / (1.0 + lam * s2)
        m_new = a + s2 * t
        P_new = s2 / (1.0 + lam * s2)
        settled = (abs(m_new - m) <= _RTOL * max(abs(m_new), 1.0)
                   and abs(P_new - P) <= _RTOL * P_new)
        m, P = m_new, P_new
        if settled:
            break
    return t, lam
