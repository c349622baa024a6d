"""Which shard a key lives on: a stable hash of a type-tagged encoding of the key.

Python's ``hash`` of a string is salted per process (``PYTHONHASHSEED``), so it would send a key
to another shard after a restart; the shard here is the first 8 bytes of BLAKE2b (``hashlib``)
of the key's encoding, read as a little-endian integer, modulo the number of shards. The
encoding tags each type, so that ``"1"`` and ``1`` never collide by construction, and is the
same on every machine and Python version:

- ``str``: ``b"s"`` and its UTF-8 bytes;
- ``bytes``: ``b"b"`` and the bytes;
- an integer (``int``, ``bool`` and NumPy's integers, which are equal as dict keys): ``b"i"``
  and its decimal digits, or, past 13,000 bits (Python limits the decimal digits it writes,
  ``sys.set_int_max_str_digits``), ``b"x"`` and its hexadecimal digits;
- a ``tuple``: ``b"t"``, its length, and each item's encoding prefixed by its length.

Other keys are refused, whatever keys were seen before: a float (``1.0`` and ``1`` are the
same dict key but would need one encoding for both), ``None``, lists and other objects.

The hash is where a key goes when nothing else decides:
:class:`~river_doebe.distributed.KeyedModels` places a key at its first row on the shard with
the fewest keys, starting its search at the hash's shard (:class:`Placement`), so that a few keys
spread evenly, and remembers the placement (a checkpoint keeps it: each shard's file holds its
keys).
"""

from __future__ import annotations

import hashlib
import numbers

__all__ = ["HASH_SCHEME", "Placement", "canonical_key", "encode_key", "shard_of"]

#: How a key is hashed to its shard, as the checkpoint manifest records it.
HASH_SCHEME = "blake2b-64(type-tagged key encoding, little-endian) mod n_shards"

#: how many bits an int key may have to be encoded by its decimal digits (13,000 bits are at most
#: 3,914 digits, under Python's default limit of 4,300 on the digits ``str`` writes)
_DECIMAL_BITS = 13_000


def canonical_key(key):
    """The key as the shards store it: NumPy integers and string subclasses become plain
    ``int`` / ``str`` (equal as dict keys), tuples item by item; ``TypeError`` for a key type
    that has no stable encoding."""
    if isinstance(key, str):
        # str.__str__, not str(): a subclass may print otherwise than its value (a str Enum's
        # member prints as 'Color.RED'), and the dict key it equals is its value
        return key if type(key) is str else str.__str__(key)
    if isinstance(key, bytes):
        return key if type(key) is bytes else bytes(key)
    if isinstance(key, numbers.Integral):
        return key if type(key) is int else int(key)
    if isinstance(key, tuple):
        return tuple(canonical_key(k) for k in key)
    if isinstance(key, numbers.Real):
        raise TypeError(
            f"key {key!r} is a {type(key).__name__}; float keys are not supported (1.0 and 1 "
            "are the same dict key): use an int or a str"
        )
    raise TypeError(
        f"key {key!r} has type {type(key).__name__}; keys must be str, bytes, int or tuples of them"
    )


def encode_key(key) -> bytes:
    """The type-tagged byte encoding of a canonical key (see the module's docstring)."""
    if isinstance(key, str):
        return b"s" + key.encode("utf-8", "surrogatepass")
    if isinstance(key, bytes):
        return b"b" + key
    if isinstance(key, int):
        if key.bit_length() <= _DECIMAL_BITS:
            return b"i" + str(int(key)).encode("ascii")
        return b"x" + format(key, "x").encode("ascii")
    if isinstance(key, tuple):
        parts = [encode_key(k) for k in key]
        return (
            b"t"
            + str(len(parts)).encode("ascii")
            + b"".join(len(p).to_bytes(8, "little") + p for p in parts)
        )
    raise TypeError(f"key {key!r} is not canonical (see canonical_key)")


def shard_of(key, n_shards: int) -> int:
    """The shard of ``key`` among ``n_shards``: the same on every run, process and machine.

    >>> shard_of("sensor-17", 4) == shard_of("sensor-17", 4)
    True
    >>> [shard_of(k, 3) for k in ("sensor-1", "sensor-2", 2, ("a", 1))]
    [2, 1, 1, 0]
    """
    digest = hashlib.blake2b(encode_key(canonical_key(key)), digest_size=8).digest()
    return int.from_bytes(digest, "little") % n_shards


class Placement:
    """Which shard each key lives on, decided at the key's first row and kept.

    A new key goes to the shard holding the fewest keys; among those, the first met going round
    the shards from the key's hash shard (:func:`shard_of`). So ``n`` keys on ``s`` shards are
    never more than one key apart however they hash, and the choice depends only on the order in
    which keys first arrive (the same stream places its keys the same way in every run).

    >>> placement = Placement(2)
    >>> [placement.place(k) for k in ("a", "b", "c", "d", "e")]
    [0, 1, 0, 1, 1]
    >>> placement.counts, placement.where("c"), placement.where("zzz")
    ([2, 3], 0, None)
    """

    def __init__(self, n_shards: int):
        self.n_shards = n_shards
        self.shard: dict = {}  # canonical key -> shard
        self.counts = [0] * n_shards

    def __len__(self) -> int:
        return len(self.shard)

    def where(self, ckey) -> int | None:
        """The shard of the canonical key ``ckey``, or None if it has none yet."""
        return self.shard.get(ckey)

    def choose(self, ckey) -> int:
        """The shard ``ckey`` is on, or would go to if placed now."""
        s = self.shard.get(ckey)
        if s is not None:
            return s
        n, counts = self.n_shards, self.counts
        least = min(counts)
        start = shard_of(ckey, n)
        for step in range(n):
            s = (start + step) % n
            if counts[s] == least:
                return s
        raise AssertionError("unreachable")  # pragma: no cover

    def place(self, ckey) -> int:
        """The shard of ``ckey``, placing it first if it has none."""
        s = self.shard.get(ckey)
        if s is None:
            s = self.choose(ckey)
            self.assign(ckey, s)
        return s

    def assign(self, ckey, s: int) -> None:
        """Put ``ckey`` on shard ``s`` (a checkpoint's placement); ``ValueError`` if it has
        another shard already."""
        old = self.shard.get(ckey)
        if old is not None:
            if old != s:
                raise ValueError(f"key {ckey!r} is on shard {old} and on shard {s}")
            return
        self.shard[ckey] = s
        self.counts[s] += 1
