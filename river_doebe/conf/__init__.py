"""Online recalibration of predictive distributions, with a long-run coverage guarantee.

This module mirrors river's ``conf`` module: :class:`Recalibrated` wraps a regressor, as
``river.conf.RegressionJackknife`` does, and ``predict_one(x, with_interval=True)`` returns a
``river.conf.Interval``. Unlike the jackknife, which gives an interval only, it keeps the wrapped
model's whole predictive distribution and returns a recalibrated one,
:class:`RecalibratedDistribution`, whose CDF is a monotone map of the wrapped model's:

``G_t(y) = g_t(F'_t(y))``, where ``F'_t`` is the wrapped predictive ``F_t`` (or, only while the
wrapped model is grossly off, a Gaussian on its mean and standard deviation, moved and
rescaled: see :class:`Recalibrated`), and ``g_t`` is a piecewise-linear, strictly increasing map
of ``[0, 1]`` onto itself whose knots are learnt online from the probability integral
transforms ``u_t = F'_t(y_t)`` of past targets.

A Gaussian stays exact and so does a mixture of Gaussians: ``g_t`` composes with the mixture's
CDF, so the recalibrated CDF, its log density (``log g_t'(F'_t(y)) + log f'_t(y)``) and its
quantiles are the exact ones of the recalibrated distribution, and
:mod:`river_doebe.metrics` scores it exactly (its CRPS by quadrature of the CDF, see
:func:`river_doebe.calibration.crps_from_cdf`).
"""

from river.conf import Interval

from river_doebe.conf.distribution import RecalibratedDistribution
from river_doebe.conf.recalibrated import Recalibrated

__all__ = ["Interval", "Recalibrated", "RecalibratedDistribution"]
