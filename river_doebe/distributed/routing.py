"""Which shard a key lives on: a stable hash of a type-tagged encoding of the key.

Python's ``hash`` of a string is salted per process (``PYTHONHASHSEED``), so it would send a key
to another shard after a restart; the shard here is the first 8 bytes of BLAKE2b (``hashlib``)
of the key's encoding, read as a little-endian integer, modulo the number of shards. The
encoding tags each type, so that ``"1"`` and ``1`` never collide by construction, and is the
same on every machine and Python version:

- ``str``: ``b"s"`` and its UTF-8 bytes;
- ``bytes``: ``b"b"`` and the bytes;
- an integer (``int``, ``bool`` and NumPy's integers, which are equal as dict keys): ``b"i"``
  and its decimal digits;
- a ``tuple``: ``b"t"``, its length, and each item's encoding prefixed by its length.

Other keys are refused: a float (``1.0`` and ``1`` are the same dict key but would need one
encoding for both), ``None``, lists and other objects.
"""

from __future__ import annotations

import hashlib
import numbers

__all__ = ["HASH_SCHEME", "canonical_key", "encode_key", "shard_of"]

#: How a key is hashed to its shard, as the checkpoint manifest records it.
HASH_SCHEME = "blake2b-64(type-tagged key encoding, little-endian) mod n_shards"


def canonical_key(key):
    """The key as the shards store it: NumPy integers and string subclasses become plain
    ``int`` / ``str`` (equal as dict keys), tuples item by item; ``TypeError`` for a key type
    that has no stable encoding."""
    if isinstance(key, str):
        return key if type(key) is str else str(key)
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
        return b"i" + str(int(key)).encode("ascii")
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
