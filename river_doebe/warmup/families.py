"""The basis families an E-DOEBE warm-up fits, by name: the one registry of the package.

The names are what ``EDOEBE(families=...)``, the command line (``--model doe-rff``) and the
benchmarks use. Each family gives its basis templates for ``D`` inputs, as in the paper's
experiments (Sec. 5.1): ARD length scales (one per input, starting at 1) for the three kernel
families, and the sizes of the paper, which a benchmark may change (``size``).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = [
    "DEFAULT_FAMILIES",
    "FAMILIES",
    "FAMILY_NAMES",
    "Family",
    "WIDE_FAMILIES",
    "WIDE_INPUTS",
    "check_families",
    "default_families",
    "derive_seed",
    "family_templates",
    "resolve_families",
]


@dataclass(frozen=True)
class Family:
    """A basis family: its name, the tag of its models (``DOE-<tag>``), a description, and its
    templates for ``n_inputs`` inputs, a seed and an optional size."""

    name: str
    tag: str
    description: str
    templates: Callable


def _hsgp(n_inputs, seed, size=100, **options):
    from river_doebe.basis import HilbertGP

    # floor(size / D) eigenfunctions per input, at least one
    return [HilbertGP(n_features=max(size, n_inputs), lengthscale=_ones(n_inputs), **options)]


def _rff(n_inputs, seed, size=50, **options):
    from river_doebe.basis import RandomFourierFeatures

    return [RandomFourierFeatures(n_frequencies=size, lengthscale=_ones(n_inputs), seed=seed,
                                  **options)]


def _rbf(n_inputs, seed, size=100, **options):
    from river_doebe.basis import RBFNetwork

    return [RBFNetwork(n_centres=size, lengthscale=_ones(n_inputs), seed=seed, **options)]


def _bspline(n_inputs, seed, size=100, **options):
    from river_doebe.basis import BSpline

    # floor(size / D) cubic B-splines per input, at least the four of one cubic piece; the
    # smoothness, one per input, starts from the basis' own starts (BSpline.hyper_start)
    degree = options.get("degree", 3)
    return [BSpline(n_features=max(size, (degree + 1) * n_inputs), smoothness=_ones(n_inputs),
                    **options)]


def _poly(n_inputs, seed, size=None, **options):
    from river_doebe.basis import AdditivePolynomial

    return [AdditivePolynomial(degree=d, **options) for d in (2, 3, 4)]


def _linear(n_inputs, seed, size=None, **options):
    from river_doebe.basis import Linear

    return [Linear(**options)]


def _ones(n_inputs: int) -> tuple:
    return tuple([1.0] * n_inputs)


#: every family, by name (paper Sec. 5.1, Experiment 1; the P-splines are this package's)
FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("hsgp", "HSGP", "additive HSGP", _hsgp),
        Family("rff", "RFF", "random Fourier features", _rff),
        Family("rbf", "RBF", "RBF network", _rbf),
        Family("bspline", "BSpline", "additive Bayesian P-splines", _bspline),
        Family("poly", "Poly", "additive polynomials (degrees 2-4)", _poly),
        Family("linear", "Linear", "linear", _linear),
    )
}

FAMILY_NAMES = tuple(FAMILIES)

#: the paper's Experiment 3 set, what ``EDOEBE()`` uses on up to ``WIDE_INPUTS`` inputs
DEFAULT_FAMILIES = ("hsgp", "rff", "rbf")

#: beyond this many inputs the additive HSGP's 100 functions cannot give each input one: its
#: template then has one per input (``F = D``), which makes every member's covariance ``D x D``
#: (memory quadratic in the inputs) and leaves each input a single eigenfunction, even about 0
#: (no linear trend in a centred input)
WIDE_INPUTS = 100

#: what ``EDOEBE()`` uses on more than ``WIDE_INPUTS`` inputs: the linear family in the HSGP's
#: place (one weight per input, as river's linear models), RFF and RBF of their fixed sizes
WIDE_FAMILIES = ("linear", "rff", "rbf")


def default_families(n_inputs: int) -> tuple:
    """The families of ``EDOEBE()`` (``families=None``) for ``n_inputs`` inputs: the paper's set
    (:data:`DEFAULT_FAMILIES`) up to :data:`WIDE_INPUTS` inputs, :data:`WIDE_FAMILIES` beyond.

    >>> from river_doebe.warmup import default_families
    >>> default_families(10), default_families(450)
    (('hsgp', 'rff', 'rbf'), ('linear', 'rff', 'rbf'))

    """
    return DEFAULT_FAMILIES if n_inputs <= WIDE_INPUTS else WIDE_FAMILIES


def family_templates(name: str, n_inputs: int, seed: int | None = None, **options) -> list:
    """Basis templates of a named family for ``n_inputs`` inputs, as in the paper's experiments.

    ``"hsgp"``: additive Hilbert-space GP with ``floor(100 / D)`` functions per input;
    ``"rff"``: 50 random Fourier frequencies; ``"rbf"``: an RBF network with 100 centres (all
    three with ARD length scales, one per input, starting at 1); ``"bspline"``: additive cubic
    P-splines with ``floor(100 / D)`` B-splines per input and one smoothness per input (its
    empirical-Bayes starts are its own, see :meth:`river_doebe.basis.BSpline.hyper_start`);
    ``"poly"``: additive polynomials
    of degrees 2, 3 and 4 (three templates); ``"linear"``: linear with a bias. ``options`` go to
    the family: ``size`` (the 100 functions, 50 frequencies or 100 centres) and the basis' own
    parameters (e.g. ``optimize_frequencies=True``).

    >>> from river_doebe.warmup import family_templates
    >>> [type(b).__name__ for b in family_templates("poly", 3)]
    ['AdditivePolynomial', 'AdditivePolynomial', 'AdditivePolynomial']
    >>> family_templates("rff", 2, seed=1, size=250)[0].n_frequencies
    250

    """
    if name not in FAMILIES:
        raise ValueError(f"unknown basis family {name!r}; the names are {', '.join(FAMILIES)}")
    return FAMILIES[name].templates(n_inputs, seed, **options)


def check_families(families) -> None:
    """Refuse, with a clear message, anything that is not a family name or a basis template."""
    from river_doebe.basis import Basis

    if families is None:
        return
    if isinstance(families, str) or not isinstance(families, list | tuple) or not families:
        raise TypeError(
            "families must be a non-empty list or tuple of family names "
            f"({', '.join(FAMILIES)}) or basis templates, got {families!r}"
        )
    for f in families:
        if isinstance(f, str):
            if f not in FAMILIES:
                raise ValueError(
                    f"unknown basis family {f!r}; the names are {', '.join(FAMILIES)}"
                )
        elif not isinstance(f, Basis):
            raise TypeError(
                f"families are family names or basis templates (e.g. 'rff' or "
                f"RandomFourierFeatures(50)), got {type(f).__name__}; explicit members go in "
                "models=[...]"
            )
    # a family given twice would give every one of its members twice (the same name draws the
    # same templates; the same template with a seed of its own, or with nothing random in it,
    # the same features), which silently doubles that family's prior weight
    seen: dict = {}
    for k, f in enumerate(families):
        if isinstance(f, str):
            key: object = f
        elif f._get_params().get("seed", 0) is None:
            continue  # (its features are drawn afresh for each template: another family)
        else:
            key = (type(f), repr(sorted(f._get_params().items())))
        if key in seen:
            what = repr(f) if isinstance(f, str) else f"the same {type(f).__name__} template"
            raise ValueError(
                f"families[{seen[key]}] and families[{k}] are {what}: its members would be in "
                "the ensemble twice; to give a family more members, raise n_samples"
            )
        seen[key] = k


def resolve_families(families, n_inputs: int, seed: int | None = None) -> list:
    """The basis templates of ``families`` (names and/or templates; ``None``: the default set for
    ``n_inputs`` inputs, :func:`default_families`)."""
    check_families(families)
    out = []
    for k, f in enumerate(default_families(n_inputs) if families is None else families):
        if isinstance(f, str):
            out.extend(family_templates(f, n_inputs, derive_seed(seed, "template", f)))
        elif seed is not None and f._get_params().get("seed", 0) is None:
            # a template without a seed of its own draws its features or centres from the
            # ensemble's seed: the same seed then gives the same ensemble, as with names
            out.append(f.clone({"seed": derive_seed(seed, "template", str(k),
                                                    type(f).__name__)}))
        else:
            out.append(f)
    return out


def derive_seed(seed: int | None, *keys: str) -> int | None:
    """A seed for one part of a warm-up, from the user's seed and names of that part only.

    Each family's random draws (features, centres, Laplace draws) then do not depend on which
    other families are in the ensemble: ``EDOEBE(seed=s)`` holds exactly the members of
    ``EDOEBE(families=("rbf",), seed=s)``, so a family alone and in the ensemble can be compared
    like for like. ``None`` stays ``None`` (fresh randomness).
    """
    if seed is None:
        return None
    words = [int(seed) % 2**32] + [zlib.crc32(k.encode()) for k in keys]
    return int(np.random.SeedSequence(words).generate_state(1)[0] % (2**31 - 1))
