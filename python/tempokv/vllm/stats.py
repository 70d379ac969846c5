"""The connector's counters in vLLM's own metrics: ``get_kv_connector_stats`` on both sides
hands vLLM what changed since the last call (``TempoKVStats``, summed across workers and the
scheduler by ``aggregate``), vLLM logs ``reduce()`` with its "KV Transfer metrics" line, and
``TempoKVPromMetrics`` adds them to its Prometheus counters (docs/vllm.md, "Metrics").
"""

from vllm.distributed.kv_transfer.kv_connector.v1.metrics import (KVConnectorPromMetrics,
                                                                  KVConnectorStats)

__all__ = ["FIELDS", "TempoKVStats", "TempoKVPromMetrics", "Deltas"]

# name: (Prometheus name, help). Counters: prometheus_client exposes each as <name>_total.
FIELDS = {
    "hit_tokens": ("vllm:tempokv_hit_tokens",
                   "Prompt tokens the TempoKV connector offered vLLM to load (its store's hit)"),
    "loaded_tokens": ("vllm:tempokv_loaded_tokens", "Tokens of KV loaded into vLLM's blocks"),
    "loaded_bytes": ("vllm:tempokv_loaded_bytes", "Bytes of KV loaded into vLLM's blocks"),
    "load_seconds": ("vllm:tempokv_load_seconds",
                     "Seconds loads took, from the worker's request to the end of the copy"),
    "loads": ("vllm:tempokv_loads", "Loads finished, copied or failed"),
    "load_errors": ("vllm:tempokv_load_errors",
                    "Loads that failed (vLLM recomputed the blocks)"),
    "saved_bytes": ("vllm:tempokv_saved_bytes", "Bytes of KV saved to the store"),
    "save_failures": ("vllm:tempokv_save_failures", "Chunks whose save failed"),
    "cancelled_claims": ("vllm:tempokv_cancelled_claims",
                         "Claims cancelled because vLLM's own prefix cache held their KV"),
    "lookup_waits": ("vllm:tempokv_lookup_waits",
                     "Lookups still in flight that schedule() waited for (lookup_wait_ms)"),
    "lookup_wait_timeouts": ("vllm:tempokv_lookup_wait_timeouts",
                             "Of those, waits that ran out (waiting then pauses for a second)"),
}


class TempoKVStats(KVConnectorStats):
    """Counter increments of one interval (every field of ``FIELDS``, 0 when absent)."""

    def reset(self):
        self.data = {}

    def aggregate(self, other):
        for k, v in (other.data or {}).items():
            self.data[k] = self.data.get(k, 0) + v
        return self

    def reduce(self):
        out = {k: self.data.get(k, 0) for k in FIELDS}
        out["load_seconds"] = round(out["load_seconds"], 3)
        return out

    def is_empty(self):
        return not any(self.data.values())


class TempoKVPromMetrics(KVConnectorPromMetrics):
    def __init__(self, vllm_config, metric_types, labelnames, per_engine_labelvalues):
        super().__init__(vllm_config, metric_types, labelnames, per_engine_labelvalues)
        self.counters = {}
        for field, (name, doc) in FIELDS.items():
            c = self._counter_cls(name=name, documentation=doc, labelnames=labelnames)
            self.counters[field] = {i: c.labels(*v) for i, v in per_engine_labelvalues.items()}

    def observe(self, transfer_stats_data, engine_idx=0):
        for field, v in (transfer_stats_data or {}).items():
            per_engine = self.counters.get(field)
            if per_engine is not None and v > 0:
                per_engine[engine_idx].inc(v)


class Deltas:
    """What a side's cumulative counters gained since the last ``take``: a TempoKVStats, or
    None when nothing changed."""

    def __init__(self):
        self._last = {}

    def take(self, totals):
        d = {k: v - self._last.get(k, 0) for k, v in totals.items()}
        self._last = dict(totals)
        d = {k: v for k, v in d.items() if v}
        return TempoKVStats(data=d) if d else None
