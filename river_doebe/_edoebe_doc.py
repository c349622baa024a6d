"""The Parameters section of the E-DOEBE's docstrings, one text for both tasks (they take the
same fifteen parameters; the classifier adds its update step). Kept here, out of
:mod:`river_doebe.edoebe`, so that the estimators' module holds their code."""

from __future__ import annotations

__all__ = ["UPDATE_PARAMETER", "edoebe_parameters"]


def edoebe_parameters(learner: str, extra: str = "") -> str:
    """The section for members given as ``learner`` learners, with ``extra`` entries last."""
    return _PARAMETERS.replace("{learner}", learner) + extra


_PARAMETERS = """    Parameters
    ----------
    families
        The basis families: names (``"hsgp"``, ``"rff"``, ``"rbf"``, ``"poly"``, ``"linear"``,
        see :data:`river_doebe.warmup.FAMILIES`) and/or basis templates whose hyperparameters
        are fitted. ``None`` means the paper's Experiment 3 set, ``("hsgp", "rff", "rbf")``:
        additive HSGP (about 100 features), random Fourier features (50 frequencies) and an RBF
        network (100 centres), all with ARD length scales; on more than 100 inputs (a bag of
        words) the linear family takes the HSGP's place, ``("linear", "rff", "rbf")``, since
        100 functions cannot cover every input (:func:`river_doebe.warmup.default_families`).
    n_warmup
        Length of the warm-up window.
    n_samples
        Members per mode: the empirical Bayes estimate and ``n_samples - 1`` draws.
    rw_variances
        The random-walk variances of the dynamic twins.
    delta
        Switching probability between twins.
    seed
        Seed of the random parts (random features, centres, draws); same seed, same ensemble.
    models
        Explicit members, as :class:`~river_doebe.{learner}` learners (skips the warm-up, see
        above).
    weight_floor
        Posterior weights below it are zeroed before the next switching step, and their
        members no longer updated (the paper: 1e-16; see :class:`river_doebe.DOEBE` for the
        default 1e-100).
    starts
        Starting length scales of the optimiser, as multiples of each input's warm-up range.
    replay
        Whether the warm-up window is filtered through the members after the fit.
    verbose
        Print the progress of the warm-up.
    static
        Whether the static members are kept. With ``static=False`` and one random-walk level
        the ensemble is the paper's DOE-X (every member dynamic, plain model averaging); with
        ``rw_variances=()`` it is OE-X (every member static).
    weighting, stacking_rate, share
        The weight rule, ``"bma"`` (the paper) or ``"stacking"`` (Soft-Bayes of rate
        ``stacking_rate``, see :mod:`river_doebe.engine.weighting`), and a fixed ``share`` with
        the uniform after the switching step between twins (``delta``).
"""


#: the classifier's own parameter
UPDATE_PARAMETER = """    update
        The members' update step: ``"laplace"`` (the paper's) or ``"ipl"``, iterated posterior
        linearisation (see :class:`~river_doebe.DOBEClassifier`); used by the members only, not
        by the warm-up fallback, whose logistic regression keeps the Laplace step.
"""
