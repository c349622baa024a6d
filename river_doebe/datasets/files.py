"""The streams read from ``.npz`` files, which the package does not ship.

Each file holds two float64 arrays, ``X`` of shape ``(n, d)`` and ``y`` of shape ``(n,)``, rows
in stream order, in the folder given as ``directory=...`` or named by ``RIVER_DOEBE_DATA`` (see
:func:`~river_doebe.datasets.data_dir`). A class here says which file, its documented shape and
column names, and how to build the file when it is missing; the loading, the checks and the
common parts of the docstrings are :class:`~river_doebe.datasets.base.NpzDataset`'s.
"""

from __future__ import annotations

import numpy as np
from river.datasets import base as river_base

from river_doebe.datasets.base import NpzDataset

__all__ = [
    "UCI",
    "UCI_NAMES",
    "Banana",
    "CPUSmall",
    "CaData",
    "Elevators",
    "Kuka1",
    "Sarcos",
    "SarcosTest",
]

_LIBSVM = (
    "C.-C. Chang and C.-J. Lin (2011). LIBSVM: a library for support vector machines. ACM TIST, "
    "2(3). Data sets: https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/"
)
_GPML = (
    "C. E. Rasmussen and C. K. I. Williams (2006). Gaussian Processes for Machine Learning. MIT "
    "Press. Data: http://www.gaussianprocess.org/gpml/data/"
)
_LWPR = "S. Vijayakumar and S. Schaal (2000). Locally weighted projection regression. ICML."


class Elevators(NpzDataset):
    """Elevators: controlling the elevators of an F16 aircraft (16,599 samples, 17 features).

    File ``elevators.npz``. It is Wilson et al.'s UCI ``elevators.mat`` (the file the paper and
    the GPyTorch tutorials load; its inputs are mean-centred and its target rescaled), with the
    paper's column selection: inputs are columns 0-15 and 17 of the 19-column matrix (column 16
    is dropped, as the paper's code does) and the target is the last column. Rows are in file
    order. Features are named ``"x00"`` to ``"x16"``.
    """

    _filename = "elevators.npz"
    _n_rows = 16599
    _n_cols = 17
    _doc_examples = """
    >>> x, y = next(iter(dataset))
    >>> len(x), type(y).__name__
    (17, 'float')
    """
    _doc_references = (
        "L. Torgo. Regression datasets (Delve elevators). "
        "https://www.dcc.fc.up.pt/~ltorgo/Regression/DataSets.html",
    )
    _doc_paper = "Table 1, Elevators"


class CaData(NpzDataset):
    """CaData: California housing prices (20,640 samples, 8 features).

    File ``cadata.npz``: the StatLib "houses" data of Pace and Barry (1997), with the features in
    the order of LIBSVM's ``cadata`` file (the paper loads that file):

    ``medianIncome, housingMedianAge, totalRooms, totalBedrooms, population, households,
    latitude, longitude``.

    The target is the median house value, in dollars. Rows are in the source file's order, which
    is assumed, not proven, to be LIBSVM's order (the first record matches).
    """

    _filename = "cadata.npz"
    _n_rows = 20640
    _n_cols = 8
    _names = (
        "medianIncome",
        "housingMedianAge",
        "totalRooms",
        "totalBedrooms",
        "population",
        "households",
        "latitude",
        "longitude",
    )
    _doc_examples = """
    >>> x, y = next(iter(dataset))
    >>> x["medianIncome"], x["latitude"], y
    (8.3252, 37.88, 452600.0)
    """
    _doc_references = (
        "R. K. Pace and R. Barry (1997). Sparse spatial autoregressions. Statistics & Probability "
        "Letters, 33(3), 291-297.",
        _LIBSVM,
    )
    _doc_paper = "Table 1, CaData"


class CPUSmall(NpzDataset):
    """CPU Small: predicting user CPU time from system activity (8,192 samples, 12 features).

    File ``cpusmall.npz``: the raw (unscaled) LIBSVM ``cpusmall`` file, i.e. the Delve
    comp-activ ``cpuSmall`` task. Features, in column order:
    ``lread, lwrite, scall, sread, swrite, fork, exec, rchar, wchar, runqsz, freemem,
    freeswap``; the target is ``usr``, the percentage of time the CPUs run in user mode.
    """

    _filename = "cpusmall.npz"
    _n_rows = 8192
    _n_cols = 12
    _names = (
        "lread",
        "lwrite",
        "scall",
        "sread",
        "swrite",
        "fork",
        "exec",
        "rchar",
        "wchar",
        "runqsz",
        "freemem",
        "freeswap",
    )
    _doc_examples = """
    >>> x, y = next(iter(dataset))
    >>> x["freeswap"], y
    (1851864.0, 90.0)
    """
    _doc_references = (
        "C. E. Rasmussen et al. (1996). The DELVE manual (comp-activ). "
        "https://www.cs.toronto.edu/~delve/data/comp-activ/desc.html",
        _LIBSVM,
    )
    _doc_paper = "Table 1, CPU Small"


_SARCOS_NAMES = tuple(f"{kind}{joint}" for kind in ("pos", "vel", "acc") for joint in range(1, 8))


class Sarcos(NpzDataset):
    """SARCOS inverse dynamics, the paper's 44,484-sample training stream (21 features).

    File ``sarcos.npz``, **not shipped**: supply it yourself. Build it from the GPML book's
    ``sarcos_inv.mat`` (key ``sarcos_inv``, a 44484 x 28 matrix) as ``X = d[:, :21]`` and
    ``y = d[:, 21]``, rows in file order, and save it with ``numpy.savez_compressed(path, X=X,
    y=y)``. A file with another row count is accepted with a warning.

    The 21 inputs are the 7 joint positions, 7 joint velocities and 7 joint accelerations of a
    SARCOS anthropomorphic robot arm, named ``pos1..pos7``, ``vel1..vel7``, ``acc1..acc7``; the
    target is the torque of the first joint. For a real-data stand-in that is available, see
    `SarcosTest` (the 4,449-sample test split).
    """

    _filename = "sarcos.npz"
    _n_rows = 44484
    _n_cols = 21
    _names = _SARCOS_NAMES
    _hint = (
        "sarcos.npz is not shipped: build it from GPML's sarcos_inv.mat as X = d[:, :21], "
        "y = d[:, 21]. The 4,449-row test split is available as 'sarcos_test'."
    )
    _doc_references = (_GPML, _LWPR)
    _doc_paper = "Table 1, SARCOS"


class SarcosTest(NpzDataset):
    """SARCOS inverse dynamics, official **test** split (4,449 samples, 21 features).

    File ``sarcos_test.npz``: the GPML book's ``sarcos_inv_test.mat`` with ``X = d[:, :21]`` and
    ``y = d[:, 21]`` (the first joint's torque). This is **not** the paper's SARCOS stream, which
    is the 44,484-sample training file (see `Sarcos`); it is a small real-data stand-in for
    smoke tests and examples. Features are named as in `Sarcos`: ``pos1..pos7``,
    ``vel1..vel7``, ``acc1..acc7``.
    """

    _filename = "sarcos_test.npz"
    _n_rows = 4449
    _n_cols = 21
    _names = _SARCOS_NAMES
    _doc_examples = """
    >>> dataset.feature_names[:3]
    ('pos1', 'pos2', 'pos3')
    """
    _doc_references = (_GPML, _LWPR)


class Kuka1(NpzDataset):
    """Kuka #1 robot inverse dynamics (197,920 samples, 21 features).

    File ``kuka1.npz``, **not shipped**: supply it yourself. Build it from Meier et al.'s
    ``kuka1_offline.txt`` followed by ``kuka1_online.txt`` (space-separated, 28 columns), as the
    paper's code does: stack the rows of both files in that order, ``X`` = the first 21 columns,
    ``y`` = column 21; save with ``numpy.savez_compressed(path, X=X, y=y)``. Features are named
    ``"x00"`` to ``"x20"``. A file with another row count is accepted with a warning.
    """

    _filename = "kuka1.npz"
    _n_rows = 197920
    _n_cols = 21
    _hint = (
        "kuka1.npz is not shipped: stack kuka1_offline.txt and kuka1_online.txt, "
        "X = first 21 columns, y = column 21."
    )
    _doc_references = (
        "F. Meier, P. Hennig and S. Schaal (2014). Incremental local Gaussian regression. "
        "NeurIPS.",
    )
    _doc_paper = "Table 1, Kuka #1"


# name -> (rows, features) of the UCI regression sets of Delbridge et al. (2020).
_UCI_SHAPES = {
    "autos": (159, 25),
    "servo": (167, 4),
    "machine": (209, 7),
    "yacht": (308, 6),
    "autompg": (392, 7),
    "housing": (506, 13),
    "stock": (536, 11),
    "energy": (768, 8),
    "concrete": (1030, 8),
    "airfoil": (1503, 5),
    "gas": (2565, 128),
    "skillcraft": (3338, 19),
    "sml": (4137, 26),
    "pol": (15000, 26),
    "bike": (17379, 17),
    "kin40k": (40000, 8),
}

#: Names accepted by :class:`UCI` (with or without the ``uci_`` prefix).
UCI_NAMES = tuple(f"uci_{name}" for name in _UCI_SHAPES)


def _uci_key(name: str) -> str:
    key = str(name).strip().lower()
    key = key[len("uci_") :] if key.startswith("uci_") else key
    if key not in _UCI_SHAPES:
        raise ValueError(
            f"Unknown UCI dataset {name!r}. Valid names: {', '.join(UCI_NAMES)} "
            "(the 'uci_' prefix is optional)."
        )
    return key


class UCI(NpzDataset):
    """One of the UCI regression sets of Delbridge et al. (2020), used in the paper's appendix.

    File ``uci_<name>.npz``: the copy in Trefor Evans's ``uci_datasets`` collection, with
    ``X`` = all columns but the last and ``y`` = the last column. As stored there, most columns
    are mean-centred and values are rounded to about 5 significant digits. Rows are in file
    order. Features are named ``"x0"``, ``"x1"``, ... (zero-padded).

    Valid names (the ``uci_`` prefix is optional), with rows x features: autos (159 x 25),
    servo (167 x 4), machine (209 x 7), yacht (308 x 6), autompg (392 x 7), housing (506 x 13),
    stock (536 x 11), energy (768 x 8), concrete (1030 x 8), airfoil (1503 x 5), gas (2565 x
    128), skillcraft (3338 x 19), sml (4137 x 26), pol (15000 x 26), bike (17379 x 17), kin40k
    (40000 x 8).
    """

    # the docstring's name for the file; each instance reads its own
    _filename = "uci_<name>.npz"
    _doc_parameters = (
        ("name", 'Which data set, e.g. ``"concrete"`` or ``"uci_concrete"``.'),
        "directory",
    )
    _doc_call = 'UCI("concrete")'
    _doc_shape = _UCI_SHAPES["concrete"]
    _doc_references = (
        "I. Delbridge, D. Bindel and A. G. Wilson (2020). Randomly projected additive Gaussian "
        "processes for regression. ICML.",
        "T. Evans. uci_datasets. https://github.com/treforevans/uci_datasets",
        "D. Dua and C. Graff (2019). UCI Machine Learning Repository. "
        "http://archive.ics.uci.edu/ml",
    )

    def __init__(self, name, directory=None):
        key = _uci_key(name)
        self.name = name
        self._filename = f"uci_{key}.npz"
        self._n_rows, self._n_cols = _UCI_SHAPES[key]
        super().__init__(directory=directory)


class Banana(NpzDataset):
    """Banana: a two-dimensional binary classification benchmark (5,300 samples).

    File ``banana.npz``: the KEEL copy of Rätsch's banana data, ``X = [At1, At2]`` (named
    ``"x0"``, ``"x1"``) and labels $\\pm 1$. The stream yields ``(x, y)`` with ``y`` a ``bool``:
    **label +1 is mapped to True and -1 to False**; ``arrays()`` returns ``y`` as a boolean
    array likewise.

    The paper runs its classification experiment on two orders of the data: shuffled (i.i.d.,
    where static models should do well) and unshuffled. Its copy of the data is ordered "from
    left to right"; the KEEL file used here is in a different, seemingly random order. Three
    orders are therefore offered:

    - file order (default);
    - ``shuffle=True``: a permutation drawn from ``np.random.RandomState(seed)`` (fixed for the
      lifetime of the object, and reproducible when ``seed`` is an integer);
    - ``left_to_right=True``: rows stably sorted by the first feature, a stand-in for the
      paper's unshuffled, left-to-right order.
    """

    _filename = "banana.npz"
    _n_rows = 5300
    _n_cols = 2
    _doc_parameters = (
        "directory",
        ("shuffle", "Whether to stream the rows in a random order."),
        ("seed", "Seed of the permutation when ``shuffle=True``."),
        ("left_to_right", "Whether to stream the rows sorted by ``x0``. Cannot be combined with "
         "``shuffle``."),
    )
    _doc_call = "Banana(shuffle=True, seed=0)"
    _doc_examples = """
    >>> x, y = next(iter(dataset))
    >>> sorted(x), type(y).__name__
    (['x0', 'x1'], 'bool')
    >>> X, y = dataset.arrays()
    >>> int(y.sum())
    2376
    """
    _doc_references = (
        "G. Rätsch, T. Onoda and K.-R. Müller (2001). Soft margins for AdaBoost. Machine "
        "Learning, 42(3), 287-320.",
        "J. Alcalá-Fdez et al. (2011). KEEL data-mining software tool: data set repository. "
        "Journal of Multiple-Valued Logic and Soft Computing, 17, 255-287.",
    )
    _doc_paper = "Appendix, classification"

    def __init__(self, directory=None, shuffle=False, seed=None, left_to_right=False):
        if shuffle and left_to_right:
            raise ValueError("Choose one order: shuffle=True or left_to_right=True, not both.")
        super().__init__(directory=directory)
        self.task = river_base.BINARY_CLF
        self.n_classes = 2
        self.shuffle = shuffle
        self.seed = seed
        self.left_to_right = left_to_right
        self._order = np.random.RandomState(seed).permutation(self.n_samples) if shuffle else None

    def _build(self):
        X, y = super()._build()
        if not np.isin(y, (-1.0, 1.0)).all():
            raise ValueError(f"{str(self.path)!r}: labels must be -1 or +1.")
        if self._order is not None:
            X, y = X[self._order], y[self._order]
        elif self.left_to_right:
            order = np.argsort(X[:, 0], kind="stable")
            X, y = X[order], y[order]
        return X, y == 1.0
