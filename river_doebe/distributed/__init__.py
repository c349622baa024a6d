"""Many keyed streams on Ray: a model per key, the keys spread over Ray actors.

:class:`KeyedModels` keeps one model per key (a sensor, a machine, a customer), cloned from a
template at the key's first row, on the Ray actor (shard) its key hashes to
(:func:`~river_doebe.distributed.routing.shard_of`, stable across runs and machines). Its
``predict_learn_many(keys, X, y)`` gives bit for bit what a dict of models fed row by row gives,
for any number of shards; ``checkpoint`` / ``KeyedModels.restore`` save and rebuild the state,
and a shard whose actor dies is rebuilt from its last snapshot and the rows logged since.

Ray is an optional dependency: ``pip install "river-doebe[ray]"``. The package has three
modules: :mod:`~river_doebe.distributed.routing` (keys to shards),
:mod:`~river_doebe.distributed.shard` (one shard's models, the actor's code) and
:mod:`~river_doebe.distributed.keyed` (the driver).
"""

try:
    import ray  # noqa: F401
except ImportError:
    raise ImportError('river_doebe.distributed needs Ray: pip install "river-doebe[ray]"') from None

from river_doebe.distributed.keyed import KeyedModels
from river_doebe.distributed.routing import shard_of

__all__ = ["KeyedModels", "shard_of"]
