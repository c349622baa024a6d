"""A lost node (issue 20): a real multi-node Ray cluster on this machine
(``ray.cluster_utils.Cluster``: a head node, which runs the driver and no shard, and three
worker nodes, each its own raylet with one CPU). Shard 0 is placed on one worker node, which is
removed mid-stream (its raylet and the shard's process die with it): the shard is rebuilt on
another node from the driver's snapshot and log, kept on the head node, and the predictions and
final states equal a dict of models fed row by row, bit for bit.
"""

from __future__ import annotations

import time

import pytest

ray = pytest.importorskip("ray")

from keyed_support import (  # noqa: E402
    _started,
    differing,
    dobe,
    feed,
    pickled,
    records,
    reference,
    states,
)

from river_doebe.distributed import KeyedModels  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def wait_dead(actor, timeout: float = 60.0) -> None:
    """Return once ``actor`` no longer answers (its process is gone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            ray.get(actor.ready.remote(), timeout=max(deadline - time.monotonic(), 0.01))
        except ray.exceptions.RayActorError:
            return
        except ray.exceptions.GetTimeoutError:
            break
        time.sleep(0.05)
    raise TimeoutError(f"the shard on the removed node still answered after {timeout:g} s")


def test_a_lost_node_loses_nothing_and_its_shard_moves_to_another_node():
    from ray.cluster_utils import Cluster
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    if ray.is_initialized():  # (another module's)
        ray.shutdown()
        _started.clear()
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 0,
            "include_dashboard": False,
            # a dead node is known in about a second (the default takes longer)
            "_system_config": {"health_check_period_ms": 300, "health_check_failure_threshold": 3},
        },
    )
    try:
        workers = [
            cluster.add_node(num_cpus=1, resources={f"worker{i}": 1}) for i in range(3)
        ]
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False, logging_level="WARNING")
        head = ray.get_runtime_context().get_node_id()
        (doomed,) = [n["NodeID"] for n in ray.nodes() if "worker0" in n["Resources"]]

        def place(s):  # shard 0 on the doomed node (soft: elsewhere once it is gone)
            if s == 0:
                return {"scheduling_strategy": NodeAffinitySchedulingStrategy(doomed, soft=True)}
            return {}

        keys, X, y = records(n_keys=12, n=1200, seed=21)
        models = {}
        expected = reference(dobe(), keys, X, y, models=models)
        with KeyedModels(
            dobe(), n_shards=2, batch_size=50, log_limit=150, actor_options=place
        ) as keyed:
            where = [m["node"] for m in keyed.memory()]
            assert where[0] == doomed and head not in where
            got = feed(keyed, keys[:500], X[:500], y[:500], 100)  # past log_limit: snapshots
            cluster.remove_node(workers[0], allow_graceful=False)
            # the shard's process outlives its raylet until it notices it is gone (a lost
            # machine takes it at once): the stream goes on once it is dead, else the next
            # calls could still reach it and no node would have been lost for them
            wait_dead(keyed.shards[0])
            got += feed(keyed, keys[500:], X[500:], y[500:], 100)
            assert got == expected
            assert not differing(states(keyed), pickled(models))
            moved = [m["node"] for m in keyed.memory()]
            assert moved[0] not in (doomed, head, where[1]) and moved[1] == where[1]
            (lost,) = [r for r in keyed.recoveries if r["shard"] == 0]
            assert "died" in lost["cause"] and lost["seconds"] is not None
            assert 0 < lost["rows_replayed"] <= 150 + 100
    finally:
        ray.shutdown()
        cluster.shutdown()
