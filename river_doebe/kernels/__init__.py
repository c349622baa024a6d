"""The compiled layer: Numba kernels of the filters and the weights, nothing river-specific.

Everything per sample that is ``O(M F^2)`` or ``O(M F)`` runs here, on arrays of a whole member
stack; the engine (:mod:`river_doebe.engine`) only sequences the calls.

- :mod:`~river_doebe.kernels.stack`: the covariance forms (a square root for static members, the
  covariance itself for dynamic ones), the predict sweep and the lazily applied updates;
- :mod:`~river_doebe.kernels.lanes`: the sweep's dot products in four fixed partial sums, four
  rows at a time in vector registers, a static member's row of Carlson's step with its product
  in one pass, and a dynamic member's rows four at a time (the same bits on every machine);
- :mod:`~river_doebe.kernels.gaussian` and :mod:`~river_doebe.kernels.logistic`: the two
  likelihoods side by side, each turning a target into per-member log-likelihoods and the gain and
  curvature of the update it records;
- :mod:`~river_doebe.kernels.weights`: switching and model-averaging steps of the log weights, and
  the predictive mixture;
- :mod:`~river_doebe.kernels.spin`: how long a round of an idle OpenMP thread's spin lasts on this
  processor (the engine sets the spin in time, not in rounds).

The bases' featurisation kernels live with their bases (:mod:`river_doebe.basis`).
"""
