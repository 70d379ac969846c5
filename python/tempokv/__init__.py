"""TempoKV's Python client: the wire protocol of tempokvd (docs/protocol.md, version 1).

Needs only the standard library, pyzmq and msgpack (Debian: python3-zmq, python3-msgpack),
imported on first use of the client.

    from tempokv import TempoKVClient, NotFound
    with TempoKVClient("ipc:///path/to/tempokvd.sock", name="engine-0") as c:
        print(c.stats()["tier_protected_bytes"])

`tempokv.vllm` is the vLLM KV connector (TempoKVConnector, TempoKVScheduler; needs vLLM, see
docs/vllm.md); `tempokv.keys` the XXH3 chunk keys of `tempokv::Key` (needs xxhash).
The error for the daemon's `IOError` code is `tempokv.IOError` (kept out of `__all__` so a star
import never shadows the builtin).
"""

from . import errors
from .errors import (
    Cancelled,
    Corruption,
    FailedPrecondition,
    Internal,
    InvalidArgument,
    IOError,  # noqa: A004 - the daemon's IOError code, not the builtin
    NotFound,
    ResourceExhausted,
    TempoKVError,
    Unavailable,
    error_from_code,
)

__all__ = ["PROTOCOL_VERSION", "TempoKVClient", "errors"] + errors.__all__


def __getattr__(name):
    # The client (pyzmq, msgpack) loads on first use, so the parts that need only torch
    # (tempokv.vllm.layout, tempokv.vllm.copy_bench) run where those are not installed: the
    # lent GPU machine's image has torch and nothing else of ours.
    if name in ("PROTOCOL_VERSION", "TempoKVClient"):
        from . import client
        return getattr(client, name)
    raise AttributeError(f"module 'tempokv' has no attribute {name!r}")
