"""LMCache as a policy of the experiment: vLLM's own LMCache connector on the CPU backend.

PyPI ``lmcache`` 0.5.6 (python/requirements-lmcache.txt, in its own environment:
scripts/install-lmcache) has no KV connector for vLLM's CPU device. ``LMCacheCPUConnector``
is vLLM's ``LMCacheConnectorV1`` with three things added when vLLM creates it (in the process
of vLLM's worker, so LMCache is imported only there):

* LMCache's connector factory answers the CPU device with ``lmcache_kv.PagedCPUKV`` (a torch
  gather/scatter of the paged KV), every other device as before;
* reads of LMCache's ``fs://`` backend are paced at the experiment's SSD read cap (a FIFO
  device at ``read_bytes_per_s``, as tempokvd's store reads are), so both systems read their
  store at the same rate;
* every retrieve and store is timed (``counters()``): the retrieves are the time to restore;
  ``wait_stored()`` waits for the store's writes under way.

LMCache's keys chain vLLM's block hash from a seed that is random per process unless
PYTHONHASHSEED is set; a store that must survive a process restart needs it, so the connector
refuses to start without ``PYTHONHASHSEED=0``.
"""

import asyncio
import functools
import os
import threading
import time

from vllm.distributed.kv_transfer.kv_connector.v1.lmcache_connector import LMCacheConnectorV1

MODULE = __name__
CONNECTOR = "LMCacheCPUConnector"
_lock = threading.Lock()
_state = {"installed": False, "read_bytes_per_s": 0.0, "free_at": 0.0, "backends": []}
_counters = {"retrieves": 0, "retrieve_s": 0.0, "retrieved_tokens": 0, "retrieves_short": 0,
             "stores": 0,
             "store_s": 0.0, "fs_reads": 0, "fs_read_bytes": 0, "fs_read_wait_s": 0.0}


def transfer_config(store_dir, chunk_tokens, read_bytes_per_s=0.0, cpu_gib=1.0):
    """vLLM's ``kv_transfer_config`` for LMCache on ``store_dir`` (its ``fs://`` backend) with
    ``chunk_tokens`` per object, no local CPU tier (every hit is read from the store), reads
    paced at ``read_bytes_per_s`` (0: unpaced); ``cpu_gib``: LMCache's staging buffers."""
    return {"kv_connector": CONNECTOR, "kv_connector_module_path": MODULE,
            "kv_role": "kv_both", "kv_load_failure_policy": "recompute",
            "kv_connector_extra_config": {
                "lmcache.chunk_size": chunk_tokens, "lmcache.local_cpu": False,
                "lmcache.max_local_cpu_size": cpu_gib,
                "lmcache.remote_url": "fs://localhost:0" + os.path.abspath(store_dir),
                "lmcache.remote_serde": "naive", "lmcache.save_unfull_chunk": False,
                "tempokv.read_bytes_per_s": float(read_bytes_per_s or 0.0)}}


def set_read_cap(read_bytes_per_s):
    """Paces the following ``fs://`` reads at ``read_bytes_per_s`` (0 or None: unpaced)."""
    with _lock:
        _state["read_bytes_per_s"] = float(read_bytes_per_s or 0.0)
        _state["free_at"] = 0.0


def counters():
    """Retrieves (count, seconds, tokens), stores (count, seconds) and fs:// reads (count,
    bytes, seconds waited for the read cap) since the process started."""
    with _lock:
        return dict(_counters)


def wait_stored(timeout_s=60.0):
    """Waits until every put LMCache's remote backends have under way has ended; returns
    whether they all did within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while any(b.put_tasks for b in _state["backends"]):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _add(**kv):
    with _lock:
        for k, v in kv.items():
            _counters[k] += v


def _read_delay(nbytes):
    """Seconds until a read of ``nbytes`` issued now ends on a device that reads one request
    after another at the cap."""
    with _lock:
        cap = _state["read_bytes_per_s"]
        if not cap:
            return 0.0
        now = time.monotonic()
        _state["free_at"] = max(now, _state["free_at"]) + nbytes / cap
        return _state["free_at"] - now


def _paced_get(get):
    @functools.wraps(get)
    async def paced(self, key):
        t = time.monotonic()
        obj = await get(self, key)
        if obj is not None:
            n = obj.get_physical_size() if hasattr(obj, "get_physical_size") else obj.get_size()
            delay = _read_delay(n) - (time.monotonic() - t)
            if delay > 0:
                await asyncio.sleep(delay)
            _add(fs_reads=1, fs_read_bytes=n, fs_read_wait_s=max(0.0, delay))
        return obj
    return paced


def _cpu_connector_factory(create):
    @functools.wraps(create)
    def factory(config, metadata, engine, *args, **kwargs):
        import lmcache
        from lmcache.utils import EngineType
        if engine == EngineType.VLLM and lmcache.torch_device_type == "cpu":
            from .lmcache_kv import PagedCPUKV
            return PagedCPUKV.from_metadata(metadata)
        return create(config, metadata, engine, *args, **kwargs)
    return factory


def _timed_retrieve(retrieve):
    """LMCacheEngine.retrieve, timed; ``retrieves_short`` counts those that restored fewer
    tokens than asked (``mask``: the tokens to restore; vLLM recomputes the rest)."""
    @functools.wraps(retrieve)
    def timed(self, tokens, mask=None, **kwargs):
        t = time.monotonic()
        got = retrieve(self, tokens, mask, **kwargs)
        n = int(got.sum().item())
        want = int(mask.sum().item()) if mask is not None else len(tokens)
        _add(retrieves=1, retrieve_s=time.monotonic() - t, retrieved_tokens=n,
             retrieves_short=int(n < want))
        return got
    return timed


def _timed_store(store):
    @functools.wraps(store)
    def timed(self, *args, **kwargs):
        t = time.monotonic()
        out = store(self, *args, **kwargs)
        _add(stores=1, store_s=time.monotonic() - t)
        return out
    return timed


def _registered(init):
    @functools.wraps(init)
    def register(self, *args, **kwargs):
        init(self, *args, **kwargs)
        _state["backends"].append(self)
    return register


def install():
    """Patches LMCache (once per process): the CPU connector, the paced fs:// reads, the
    timers. Raises when LMCache is not importable or PYTHONHASHSEED is not 0."""
    if os.environ.get("PYTHONHASHSEED") != "0":
        raise RuntimeError("LMCache on vLLM needs PYTHONHASHSEED=0 in the engine's environment "
                           "(set before Python starts): its keys are not stable across "
                           f"processes otherwise (PYTHONHASHSEED={os.environ.get('PYTHONHASHSEED')!r})")
    with _lock:
        if _state["installed"]:
            return
        _state["installed"] = True
    try:
        import lmcache.v1.gpu_connector as gpu_connector
        from lmcache.v1.cache_engine import LMCacheEngine
        from lmcache.v1.storage_backend.connector.fs_connector import FSConnector
        from lmcache.v1.storage_backend.remote_backend import RemoteBackend
    except ImportError as e:
        raise RuntimeError(f"the lmcache policy needs LMCache 0.5.6 in the engine's Python "
                           f"(scripts/install-lmcache): {e}") from e
    gpu_connector.CreateGPUConnector = _cpu_connector_factory(gpu_connector.CreateGPUConnector)
    FSConnector.get = _paced_get(FSConnector.get)
    RemoteBackend.__init__ = _registered(RemoteBackend.__init__)
    LMCacheEngine.retrieve = _timed_retrieve(LMCacheEngine.retrieve)
    LMCacheEngine.store = _timed_store(LMCacheEngine.store)


class LMCacheCPUConnector(LMCacheConnectorV1):
    """vLLM's LMCache connector, with ``install()`` done first (in vLLM's process)."""

    def __init__(self, vllm_config, role, kv_cache_config=None):
        install()
        extra = vllm_config.kv_transfer_config.kv_connector_extra_config or {}
        set_read_cap(extra.get("tempokv.read_bytes_per_s", 0.0))
        super().__init__(vllm_config, role, kv_cache_config)
