"""Target scaling that keeps the predictive distribution.

river's ``preprocessing.TargetStandardScaler`` trains a regressor on the standardised target and
maps its point prediction back, but its ``predict_one`` has no ``with_dist``: behind it a model's
predictive distribution is lost. :class:`TargetStandardScaler` here does the same scaling, with
the same arithmetic, and also maps the distribution back, exactly (an affine map of a Gaussian or
of a mixture of Gaussians is again one, see :func:`river_doebe.distributions.affine`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Literal, overload

from river import base, proba, stats
from river.conf import Interval

from river_doebe._compat import is_regressor
from river_doebe._schema import check_target
from river_doebe.distributions import GaussianMixture, affine, gaussian
from river_doebe.metrics import _log_density

__all__ = ["TargetStandardScaler"]


def _recalibrated_type() -> Any:
    """The recalibrated distribution's class (imported when first needed: it loads river's
    ``proba`` helpers of the ``conf`` module)."""
    from river_doebe.conf.distribution import RecalibratedDistribution

    return RecalibratedDistribution


class TargetStandardScaler(base.Wrapper, base.Regressor):
    """Standardises the target for a regressor, and maps its predictions and predictive
    distributions back to the target's units.

    A drop-in replacement for river's ``preprocessing.TargetStandardScaler`` (same name, same
    constructor, same point predictions bit for bit) whose ``predict_one(x, with_dist=True)``
    returns the wrapped model's predictive distribution in the target's units instead of
    failing.

    The running mean ``m`` and standard deviation ``s`` (``ddof=1``) of the targets learnt so far
    are kept in ``var``, a ``river.stats.Var``, as river does. ``learn_one(x, y)`` first adds
    ``y`` to them and then trains the regressor on ``(y - m) / s`` (on 0 while ``s`` is 0, as
    after the first target); if the regressor refuses the sample (its ``learn_one`` raises), the
    statistics are put back as they were, bit for bit, and the error is raised again. A
    prediction uses the statistics as they are, before its own target is learnt: a standardised
    prediction ``z`` becomes ``z * s + m``, and a predictive distribution is mapped by the same
    affine map, exactly:

    - a ``river.proba.Gaussian`` ``N(mu, sigma^2)`` becomes ``N(mu * s + m, (s * sigma)^2)``;
    - a :class:`river_doebe.distributions.GaussianMixture` (the ensembles' predictive) keeps its
      weights, each component is mapped so, and so are its ``mu`` and ``sigma``;
    - a :class:`river_doebe.conf.RecalibratedDistribution` (``EDOEBE()``'s predictive) keeps
      its map of the levels, and its base distribution is mapped so (with the point prediction
      it carries).

    The returned distribution's ``mu`` is therefore ``predict_one(x)``, to the last bit, for
    models whose distribution's ``mu`` is their point prediction (this package's models).

    ``predict_one(x, with_interval=True)`` maps the wrapped model's prediction interval (a
    ``river.conf.Interval``, e.g. an :class:`river_doebe.EDOEBE`'s conformal one) back the same
    way, both ends ``* s + m`` (of the same type, its center and width following): it covers the
    targets as the wrapped model's covers their standardised values. Other keywords go to the
    wrapped model's ``predict_one``, as river's scaler passes them.

    While ``s`` is 0 (before two targets are learnt, or while all of them are equal), river's map
    sends every value to ``m``: the point prediction is ``m``, as river's. The target's scale is
    not known yet, so the distribution is not mapped by it (that would be a point mass, density 0
    everywhere, and a predictive log-likelihood of ``-inf``): it is the wrapped model's own
    predictive, on a unit scale, moved so that its mean is ``m``. Its density is proper from the
    first sample, and ``log_density_one`` scores it. An interval is likewise the wrapped model's,
    on a unit scale, moved with its point prediction to ``m``.

    Parameters
    ----------
    regressor
        The regressor to train on the standardised target, e.g. a :class:`river_doebe.DOBE`, an
        ensemble, or a pipeline that ends in one. For ``with_dist=True`` its ``predict_one`` must
        accept ``with_dist`` and return a ``river.proba.Gaussian``, a ``GaussianMixture`` or a
        ``RecalibratedDistribution`` of either; for ``with_interval=True`` it must accept
        ``with_interval`` and return a ``river.conf.Interval``.

    Attributes
    ----------
    var
        The running ``river.stats.Var`` of the targets learnt so far (its ``mean`` is their mean).

    Examples
    --------

    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from river_doebe import DOBE, DOEBE
    >>> from river_doebe.basis import Linear, RandomFourierFeatures
    >>> from river_doebe.preprocessing import TargetStandardScaler

    The scaler in front of a pipeline, as with river's:

    >>> model = TargetStandardScaler(
    ...     preprocessing.StandardScaler()
    ...     | DOBE(RandomFourierFeatures(50, lengthscale=5.0, seed=1), var_eps=0.1, var_rw=1e-3)
    ... )
    >>> evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    MAE: 0.37...

    The predictive distribution is in the target's units (an approval rate, in percent), and its
    mean is the point prediction. Here the model learns all of the stream but its last sample,
    and predicts that one:

    >>> stream = list(datasets.TrumpApproval())
    >>> model = model.clone()
    >>> for x, y in stream[:-1]:
    ...     model.learn_one(x, y)
    >>> x, y = stream[-1]
    >>> dist = model.predict_one(x, with_dist=True)
    >>> dist
    𝒩(μ=41.639, σ=0.576)
    >>> dist.mu == model.predict_one(x)
    True
    >>> y, round(dist.cdf(y), 3)
    (41.740203, 0.57)

    An ensemble's mixture is mapped whole, and ``log_density_one`` scores a target in its units:

    >>> ensemble = TargetStandardScaler(
    ...     preprocessing.StandardScaler()
    ...     | DOEBE([
    ...         DOBE(RandomFourierFeatures(20, lengthscale=5.0, seed=1), var_eps=0.1, var_rw=1e-3),
    ...         DOBE(RandomFourierFeatures(20, lengthscale=2.0, seed=1), var_eps=0.1, var_rw=1e-3),
    ...     ])
    ... )
    >>> for xi, yi in stream[:-1]:
    ...     ensemble.learn_one(xi, yi)
    >>> mixture = ensemble.predict_one(x, with_dist=True)
    >>> mixture
    GaussianMixture(2 components, μ=41.600, σ=0.575)
    >>> mixture.means.round(2)
    array([41.6, 41.7])
    >>> round(ensemble.log_density_one(x, y), 4), round(mixture.log_pdf(y), 4)
    (-0.3957, -0.3957)

    """

    def __init__(self, regressor: base.Regressor):
        if not is_regressor(regressor):
            raise TypeError(
                f"regressor must be a river regressor, got {type(regressor).__name__} "
                f"({regressor!r})"
            )
        self.regressor = regressor
        # named as in river's scaler, so code that reads `model.var` keeps working
        self.var = stats.Var()

    @property
    def _wrapped_model(self):
        return self.regressor

    @classmethod
    def _unit_test_params(cls):
        from river import preprocessing

        from river_doebe import DOBE, DOEBE
        from river_doebe.basis import Linear, RandomFourierFeatures

        yield {"regressor": DOBE(RandomFourierFeatures(10, seed=1), var_rw=1e-3)}
        yield {
            "regressor": preprocessing.StandardScaler()
            | DOEBE([DOBE(Linear(), var_eps=1.0), DOBE(RandomFourierFeatures(8, seed=3))])
        }

    def _scale_shift(self) -> tuple[float, float]:
        # the map back from the standardised scale, z -> z * s + m, written as river writes it
        return self.var.get() ** 0.5, self.var.mean.get()

    def learn_one(self, x: dict, y: float, **kwargs: Any) -> None:
        y = check_target(y)
        # the regressor checks x only once y is in the statistics; a sample it refuses must not
        # stay in them. river's Var and its Mean hold their state in float attributes: copies of
        # their attribute dicts keep the very objects, so restoring them is exact (a revert
        # recomputes, and rounds), and they cost far less than a deepcopy
        saved = vars(self.var).copy(), vars(self.var.mean).copy()
        # as river: y joins the statistics before it is standardised, so the first target is
        # learnt as 0 (its standard deviation is still 0)
        self.var.update(y)
        s, m = self._scale_shift()
        z = (y - m) / s if s else 0.0
        try:
            self.regressor.learn_one(x, z, **kwargs)
        except BaseException:
            # (an interrupt too: the sample was not learnt whole)
            self._restore(*saved)
            raise

    def _restore(self, var_state: dict, mean_state: dict) -> None:
        # the Var's dict first: it points back to the Mean it held, if update replaced it
        vars(self.var).clear()
        vars(self.var).update(var_state)
        vars(self.var.mean).clear()
        vars(self.var.mean).update(mean_state)

    @overload
    def predict_one(self, x: dict, with_dist: Literal[False] = ...,
                    with_interval: Literal[False] = ..., **kwargs: Any) -> float: ...

    @overload
    def predict_one(self, x: dict, with_dist: Literal[True], with_interval: Literal[False] = ...,
                    **kwargs: Any) -> proba.base.ContinuousDistribution: ...

    @overload
    def predict_one(self, x: dict, with_dist: Literal[False] = ..., *,
                    with_interval: Literal[True], **kwargs: Any) -> Interval: ...

    @overload
    def predict_one(self, x: dict, with_dist: bool = ..., with_interval: bool = ...,
                    **kwargs: Any) -> float | proba.base.ContinuousDistribution | Interval: ...

    def predict_one(self, x: dict, with_dist: bool = False, with_interval: bool = False,
                    **kwargs: Any) -> float | proba.base.ContinuousDistribution | Interval:
        """The prediction for ``x`` in the target's units: the wrapped model's prediction mapped
        back, with ``with_dist=True`` its predictive distribution mapped back (of the wrapped
        model's kind), or with ``with_interval=True`` its prediction interval mapped back."""
        if with_dist and with_interval:
            raise ValueError("ask for with_dist=True or for with_interval=True, not both")
        s, m = self._scale_shift()
        # other keywords go to the wrapped model, as river's scaler passes them
        if with_interval:
            return self._interval(x, s, m, kwargs)
        if not with_dist:
            return self.regressor.predict_one(x, **kwargs) * s + m
        dist = self._standardised_dist(x, kwargs)
        if isinstance(dist, _recalibrated_type()):
            # a map of the CDF's levels commutes with a change of the target's units: the map
            # stays, its base moves (and the point prediction it carries with it)
            out = type(dist)._unchecked(self._back(dist.base, s, m), dist.knots_u, dist.knots_p)
            point = getattr(dist, "point", None)
            if point is not None:
                out.point = point * s + m
            return out
        return self._back(dist, s, m)

    @staticmethod
    def _back(dist: Any, s: float, m: float) -> Any:
        """A Gaussian or a mixture in standardised units, in the target's."""
        if s > 0.0:
            return affine(dist, s, m)
        # no scale yet: the wrapped model's spread on a unit scale, its mean moved to the point
        # prediction (computed as the point prediction's is, so that the two stay equal)
        centre = dist.mu * s + m
        if isinstance(dist, GaussianMixture):
            mu, var = dist._mv()
            return GaussianMixture._from_moments(
                dist.weights, dist.means - mu + centre, dist.variances, centre, var
            )
        return gaussian(centre, dist.sigma * dist.sigma)

    def _interval(self, x: dict, s: float, m: float, kwargs: dict) -> Interval:
        """The wrapped model's interval for ``x``, in the target's units."""
        # no scale yet: the point prediction it is moved with, asked before the interval, so
        # that the last prediction (which a recalibration keeps for learn_one) is the interval's,
        # as without the scaler
        point = self.regressor.predict_one(x, **kwargs) if not s > 0.0 else 0.0
        interval = self._ask(x, "with_interval", kwargs)
        if not isinstance(interval, Interval):
            # a pipeline drops `with_interval` for a final step that does not take it
            raise TypeError(
                f"{type(self.regressor).__name__}.predict_one(x, with_interval=True) returned "
                f"{interval!r}, not a river.conf.Interval: the wrapped model must give a "
                "prediction interval (e.g. an EDOEBE, or a model wrapped in "
                "river_doebe.conf.Recalibrated)"
            )
        # its center and width follow its ends; a field or attribute of a subclass beyond them
        # has no known map, and left as it is it would be in the wrong units
        extra = ({f.name for f in dataclasses.fields(interval)}
                 | set(getattr(interval, "__dict__", ()))) - {"lower", "upper"}
        if extra:
            raise TypeError(
                f"the wrapped model's interval, a {type(interval).__name__}, carries "
                f"{sorted(extra)}, which the scaler cannot map back to the target's units"
            )
        if s > 0.0:
            lower, upper = interval.lower * s + m, interval.upper * s + m
        else:
            # as the distribution then: on a unit scale, moved with the point prediction to m
            # (scaled by 0 it would be a point, and an infinite end NaN)
            lower, upper = interval.lower - point + m, interval.upper - point + m
        return dataclasses.replace(interval, lower=lower, upper=upper)

    def _ask(self, x: dict, flag: str, kwargs: dict) -> Any:
        """The wrapped model's ``predict_one(x, **{flag: True}, **kwargs)``, or the
        ``TypeError`` of a model that does not take ``flag`` (a river regressor need not: the
        caller checks the answer; river 0.22's pipeline hands the flag on to a last step without
        it)."""
        try:
            return self.regressor.predict_one(x, **{flag: True}, **kwargs)
        except TypeError as err:
            if flag not in str(err):
                raise
            return err

    def _standardised_dist(self, x: dict, kwargs: dict) -> Any:
        dist = self._ask(x, "with_dist", kwargs)
        if not isinstance(dist, proba.Gaussian | GaussianMixture | _recalibrated_type()):
            # a pipeline drops `with_dist` for a final step that does not take it, and returns
            # that step's number
            raise TypeError(
                f"{type(self.regressor).__name__}.predict_one(x, with_dist=True) returned "
                f"{dist!r}, not a river.proba.Gaussian or a GaussianMixture: the wrapped model "
                "must give a predictive distribution"
            )
        return dist

    def log_density_one(self, x: dict, y: float) -> float:
        """Log density of ``y`` under the predictive distribution for ``x``, before learning it.

        It is the wrapped model's log density of the standardised target minus the log of the
        scale, ``log p(z) - log(s)`` with ``z = (y - m) / s`` (the change of variables): the
        wrapped model's own ``log_density_one`` when it has one (this package's models), else
        the log density of its ``predict_one(x, with_dist=True)`` (a pipeline ending in one).
        While the scale is 0 it is the log density of the distribution that ``predict_one(x,
        with_dist=True)`` returns then (the wrapped model's predictive on a unit scale).
        """
        y = check_target(y)
        s, m = self._scale_shift()
        if not s > 0.0:
            return float(_log_density(self.predict_one(x, with_dist=True), y))
        z = (y - m) / s
        own = getattr(self.regressor, "log_density_one", None)
        if own is not None:
            log_p = own(x, z)
        else:
            log_p = _log_density(self._standardised_dist(x, {}), z)
        return float(log_p) - math.log(s)
