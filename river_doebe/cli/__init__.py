"""The ``river-doebe`` command: progressive validation of a DOEBE model against river's own.

Two subcommands::

    river-doebe list
    river-doebe evaluate [--stream drift] [--model edoebe] [--peers blr hat knn] ...
    river-doebe evaluate --csv FILE --target COLUMN [--drop COLUMN ...] ...

``evaluate`` streams a dataset of :mod:`river_doebe.datasets`, or a user's CSV file read by
river's ``stream.iter_csv`` (its numeric columns are the features), through a chosen model of
this package and through river regressors, strictly one step ahead (each sample is predicted before
it is learnt, :func:`river_doebe.evaluate.progressive_scores`), shows a progress bar per model and
prints a table: nMSE, MAE, the predictive log-likelihood (PLL) where the model gives a
predictive distribution, and samples per second. ``--json`` keeps every number and trace,
``--plot`` draws nMSE over time and the E-DOEBE's weights over time.

The default model is the drop-in ``EDOEBE()`` with the library's own defaults (a warm-up of
1,000 samples, 5 members per mode, starts 0.1, 1 and 10 times each input's range), on the
built-in :class:`~river_doebe.datasets.Drift` stream (5,000 samples); ``river-doebe evaluate``
takes about ten seconds on two cores. ``--fast`` uses a smaller warm-up (500 samples, 3 members
per mode, one start) for quick looks at long or wide streams. On a stream too short for that
warm-up to be at most a fifth of it, the warm-up is a fifth of the stream (at least 50
samples), as the header line says, unless ``--n-warmup`` is given.

Every sample is scored, the warm-up included (an E-DOEBE predicts with a Bayesian linear
fallback while it warms up), so all models are compared on the same samples. The nMSE divides
by the variance of all the streamed targets, as in the paper; the PLL is the mean log density of
the targets as given under each model's predictive distribution (an ensemble's is the mixture of
its members' Gaussians), so it moves by ``-log c`` when ``y`` is scaled by ``c`` (the paper's
figures are for standardised targets).
Errors (a missing data file, an unknown stream or model, a non-numeric CSV column, bad options)
print one line ``error: ...`` to stderr and exit with status 2.

The package has one module per part: :mod:`~river_doebe.cli.entry` (the entry point, the
argument parser and the subcommands), :mod:`~river_doebe.cli.registry` (the models and river's
peers, which the benchmarks build from too), :mod:`~river_doebe.cli.streams` (the built-in
streams and CSV files), :mod:`~river_doebe.cli.run` (running one model) and
:mod:`~river_doebe.cli.report` (the table, the JSON and the plot).
"""

from river_doebe.cli.entry import build_parser, main
from river_doebe.cli.registry import MODELS, PEERS

__all__ = ["MODELS", "PEERS", "build_parser", "main"]
