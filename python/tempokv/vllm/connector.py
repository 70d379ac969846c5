"""TempoKVConnector: vLLM's KVConnectorBase_V1 on tempokvd.

Load it with::

    --kv-transfer-config '{"kv_connector": "TempoKVConnector",
                           "kv_connector_module_path": "tempokv.vllm",
                           "kv_role": "kv_both", "kv_load_failure_policy": "recompute",
                           "kv_connector_extra_config": {"endpoint": "ipc:///path/tempokvd.sock"}}'
    --scheduler-cls tempokv.vllm.TempoKVScheduler   (optional: waiting-queue snapshots for TTU)

``kv_connector_extra_config``: ``endpoint`` (required), ``runtime`` (tempokvd runtime name shared
by this engine's scheduler and workers; default derived from the endpoint and the engine),
``token`` or ``token_file`` (the runtime's token where tempokvd's ``server.tokens_file`` lists it),
``chunk_tokens`` (default 256, a multiple of vLLM's block size), ``timeout_s`` (per call, default
2), ``load_timeout_s`` (a claim not ready by then is recomputed, default 60), ``put_timeout_s``
(a save's wait for durability, on the saver thread only, default 30), ``lookup_wait_ms`` (how
long one ``schedule()`` may wait in all for lookups still in flight, default 5; 0: never),
``digest_file``
(test only: digests of saved and loaded blocks), ``test_load_delay_s`` (test only: hold each
ready claim that long before copying it), ``test_save_delay_s`` (test only: each save waits
that long before its copy), ``test_alter_loaded_block`` (test only: the first block loaded
gets one bit flipped after its copy, the e2e check's negative control), ``counters_file``
(tests only: each side appends its counters as a JSON line at most every 0.25 s and at
shutdown, for a driver that does not share the engine's process).

Nothing here is device-specific: the KV layout is detected in ``register_kv_caches``. Keys name
everything the KV depends on (``identity.py``); every object carries a header the loader checks
(``header.py``).
"""

import json
import logging
import os
import time

from vllm.distributed.kv_transfer.kv_connector.v1.base import (
    KVConnectorBase_V1,
    KVConnectorRole,
)

from ..keys import model_id
from .identity import model_descriptor, rank_model_ids, worker_rank
from .internals import check_version
from .layout import KVLayout
from .metadata import TempoKVMetadata
from .stats import Deltas, TempoKVPromMetrics, TempoKVStats
from .streams import compute_event

__all__ = ["TempoKVConnector"]

log = logging.getLogger("tempokv.vllm")


def _device_type():
    from vllm.platforms import current_platform
    return current_platform.device_type


def _token_budget(scheduler_config):
    """Tokens per step for tempokvd's TTU projection: vLLM's max_num_batched_tokens when it chunks
    prefills (a prefill then runs chunk by chunk beside the decoders), else 0 (prefills whole)."""
    if not getattr(scheduler_config, "enable_chunked_prefill", False):
        return 0
    return int(getattr(scheduler_config, "max_num_batched_tokens", 0) or 0)


class TempoKVConnector(KVConnectorBase_V1):
    def __init__(self, vllm_config, role, kv_cache_config=None):
        check_version()  # private scheduler internals are read: a tested vLLM only
        super().__init__(vllm_config=vllm_config, role=role, kv_cache_config=kv_cache_config)
        extra = dict(self._kv_transfer_config.kv_connector_extra_config or {})
        self.endpoint = extra.get("endpoint") or os.environ.get("TEMPOKV_ENDPOINT", "")
        if not self.endpoint:
            raise ValueError("TempoKVConnector: kv_connector_extra_config.endpoint is required")
        self.chunk_tokens = int(extra.get("chunk_tokens", 256))
        self.timeout_s = float(extra.get("timeout_s", 2.0))
        self.load_timeout_s = float(extra.get("load_timeout_s", 60.0))
        self.put_timeout_s = float(extra.get("put_timeout_s", 30.0))
        self.lookup_wait_s = float(extra.get("lookup_wait_ms", 5.0)) / 1e3
        if not self.lookup_wait_s >= 0:
            raise ValueError("TempoKVConnector: kv_connector_extra_config.lookup_wait_ms must be "
                             f">= 0, got {extra.get('lookup_wait_ms')!r}")
        # How long the scheduler's agent and the workers' links stay down after the daemon
        # could not be reached before they say hello again.
        self.retry_s = float(extra.get("retry_s", 1.0))
        if not self.retry_s > 0:
            raise ValueError("TempoKVConnector: kv_connector_extra_config.retry_s must be > 0, "
                             f"got {extra.get('retry_s')!r}")
        self.digest_file = extra.get("digest_file")
        self.test_load_delay_s = float(extra.get("test_load_delay_s", 0))  # e2e's daemon kill
        self.test_save_delay_s = float(extra.get("test_save_delay_s", 0))  # saves still queued
        self.test_alter_loaded_block = bool(extra.get("test_alter_loaded_block", False))
        self.counters_file = extra.get("counters_file")
        self._counters_written = 0.0
        engine = self._kv_transfer_config.engine_id or "engine"
        self.runtime = str(extra.get("runtime") or f"vllm:{engine}")
        # The runtime's token where tempokvd's server.tokens_file lists it (docs/service.md,
        # "Security model"); or a file holding it.
        self.token = str(extra.get("token") or "")
        if not self.token and extra.get("token_file"):
            with open(extra["token_file"]) as f:
                self.token = f.read().strip()
        if self._kv_transfer_config.kv_load_failure_policy != "recompute":
            log.warning("tempokv: kv_load_failure_policy is %r: a failed load fails the "
                        "request; set \"recompute\" to recompute it instead",
                        self._kv_transfer_config.kv_load_failure_policy)
        pc = vllm_config.parallel_config
        self.block_size = vllm_config.cache_config.block_size
        # The scheduler asks for every rank's objects; a worker saves and loads its own.
        self.model_ids = rank_model_ids(vllm_config, kv_cache_config, _device_type())
        self.rank = None
        if role == KVConnectorRole.SCHEDULER:
            self.model_id = self.model_ids[0]
        else:
            self.rank = worker_rank(pc)
            self.model_name = model_descriptor(vllm_config, kv_cache_config, _device_type(),
                                               self.rank)
            self.model_id = model_id(self.model_name)
        world = len(self.model_ids)
        self._sched = self._worker = None
        sc = vllm_config.scheduler_config
        # The runtime's settings go in every hello of this engine, the scheduler's and the
        # workers': whichever reaches tempokvd first creates the runtime. Loads are always
        # asynchronous (get_num_new_matched_tokens answers True): vLLM's Scheduler keeps a
        # request whose KV loads off max_num_seqs until it has arrived.
        self.runtime_settings = dict(max_active=sc.max_num_seqs, token_budget=_token_budget(sc),
                                     async_loads=True, ranks=world if world > 1 else 0)
        if role == KVConnectorRole.SCHEDULER:
            from .agent import SchedulerAgent
            from .scheduler_side import ConnectorScheduler
            self.agent = SchedulerAgent(self.endpoint, self.runtime,
                                        self.runtime_settings["max_active"],
                                        timeout_s=self.timeout_s, retry_s=self.retry_s,
                                        token=self.token,
                                        token_budget=self.runtime_settings["token_budget"],
                                        async_loads=self.runtime_settings["async_loads"],
                                        ranks=self.runtime_settings["ranks"])
            self._sched = ConnectorScheduler(self.agent, self.model_ids, self.chunk_tokens,
                                             self.block_size, lookup_wait_s=self.lookup_wait_s)
        self.loader = self.saver = self.layout = None
        self._sending = set()  # finished requests with saves, waiting to be reported
        self._load_errors = set()
        self._freed_by_load = set()  # the scheduler side's TempoKVMetadata.freed_by_load
        self._deltas = Deltas()  # get_kv_connector_stats

    # ---------------------------------------------------------------- scheduler side
    def on_new_request(self, request):
        self._sched.on_new_request(request)

    def bind_kv_cache_manager(self, kv_cache_manager):
        super().bind_kv_cache_manager(kv_cache_manager)
        if self._sched is not None:
            self._sched.kv_cache_manager = kv_cache_manager

    def get_num_new_matched_tokens(self, request, num_computed_tokens):
        return self._sched.get_num_new_matched_tokens(request, num_computed_tokens)

    def update_state_after_alloc(self, request, blocks, num_external_tokens):
        self._sched.update_state_after_alloc(request, blocks, num_external_tokens)

    def build_connector_meta(self, scheduler_output):
        self._write_counters()
        return self._sched.build_connector_meta(scheduler_output)

    def request_finished(self, request, block_ids):
        return self._sched.request_finished(request), None

    def update_connector_output(self, connector_output):
        super().update_connector_output(connector_output)
        self._sched.on_finished_recving(connector_output.finished_recving)
        self._sched.on_finished_sending(connector_output.finished_sending)

    def take_events(self):
        """vLLM's KV cache events: a BlockStored (medium "tempokv", one chunk of
        ``chunk_tokens``) for each chunk saved, once its request's saves are copied out."""
        if self._sched is None:
            return ()
        events, self._sched.events = self._sched.events, []
        return events

    def on_schedule(self, snapshot):
        """From TempoKVScheduler after each schedule(): the step's snapshot to tempokvd."""
        self.agent.step(snapshot)

    def rid_of(self, req_id):
        return self._sched.rid_of(req_id)

    # ---------------------------------------------------------------- worker side
    def register_kv_caches(self, kv_caches):
        from .digests import Digests
        from .header import layout_digest
        from .identity import WorkerIdentity
        from .link import Link
        from .loader import Loader
        from .saver import Saver

        cfg = self._kv_cache_config
        self.layout = KVLayout(kv_caches, cfg.num_blocks, self.block_size,
                               self.chunk_tokens // self.block_size)
        identity = WorkerIdentity(self.model_id, self.rank, layout_digest(self.layout))
        log.info("tempokv: KV layout %s; %d B per %d-token object; rank %s, model id %016x",
                 self.layout.describe(), self.layout.object_bytes, self.chunk_tokens,
                 self.rank, self.model_id)
        digests = Digests(self.digest_file) if self.digest_file else None
        link = lambda name: Link(self.endpoint, self.runtime, name, self.timeout_s,  # noqa: E731
                                 retry_s=self.retry_s, token=self.token,
                                 settings=self.runtime_settings,
                                 put_timeout_s=self.put_timeout_s)
        load_link, save_link = link("vllm-worker-load"), link("vllm-worker-save")
        if self.layout.device.type == "cuda":
            # Page-locked for DMA copies; unregistered before a new daemon's files are mapped.
            from .streams import register_host, unregister_host
            load_link.on_connect = lambda lk: register_host(lk.tier)
            load_link.on_unmap = lambda tier, write: unregister_host(tier)
            save_link.on_write_map = lambda write: register_host(write, read_only=False)
            save_link.on_unmap = lambda tier, write: unregister_host(write)
        self.loader = Loader(load_link, self.layout, identity, self.load_timeout_s, digests,
                             delay_s=self.test_load_delay_s,
                             alter_block=self.test_alter_loaded_block)
        self.saver = Saver(save_link, self.layout, identity, digests=digests,
                           delay_s=self.test_save_delay_s)

    def start_load_kv(self, forward_context, **kwargs):
        meta = self._get_connector_metadata()
        for spec in meta.loads:
            self.loader.submit(spec)

    def wait_for_layer_load(self, layer_name):
        return  # loads are asynchronous: requests run only once their load finished

    def save_kv_layer(self, layer_name, kv_layer, attn_metadata, **kwargs):
        return  # whole chunks are copied out after the step (wait_for_save)

    def wait_for_save(self):
        meta = self._get_connector_metadata()
        if meta.saves:
            # After this step's forward pass, on the compute stream: the saves' copies wait
            # for it on the saver's stream (streams.py).
            self.saver.submit(meta.saves, compute_event(self.layout.device))

    def handle_preemptions(self, kv_connector_metadata):
        # Before this step's forward pass, which may write the blocks vLLM freed at the
        # preemption: their saves are copied out first (vLLM's own offloading connectors
        # finish their transfers here too).
        if isinstance(kv_connector_metadata, TempoKVMetadata) and kv_connector_metadata.preempted:
            self.saver.flush(kv_connector_metadata.preempted)

    def get_finished(self, finished_req_ids):
        if self.loader is None:
            return None, None
        self._write_counters()
        self.loader.cancel(finished_req_ids)
        recving, errors = self.loader.take_finished()
        self._load_errors |= errors
        if self.has_connector_metadata():
            self._freed_by_load |= getattr(self._get_connector_metadata(), "freed_by_load", set())
        # vLLM frees those on their load's finished_recving: never in finished_sending too.
        for r in self._freed_by_load & set(finished_req_ids):
            self.saver.forget(r)
        finished = set(finished_req_ids) - self._freed_by_load
        self._freed_by_load -= set(finished_req_ids)
        self._sending |= finished
        sending = self.saver.copied_out(self._sending)
        # Only requests that had saves were kept by request_finished; the others are dropped.
        reported = {r for r in sending if self.saver.had_saves(r)}
        self._sending -= sending
        for r in sending:
            self.saver.forget(r)
        return (reported or None), (recving or None)

    def get_block_ids_with_load_errors(self):
        errors, self._load_errors = self._load_errors, set()
        return errors

    def shutdown(self):
        if self._sched is not None:
            self.agent.flush(5.0)
            self.agent.close()
        if self.saver is not None:
            self.saver.close()
        if self.loader is not None:
            self.loader.close()
        self._write_counters(force=True)

    def counters(self):
        """This side's counters (the scheduler's agent, or the worker's loader and saver)."""
        if self._sched is not None:
            a = self.agent
            return {"role": "scheduler", "agent_errors": a.errors,
                    "trimmed_claims": a.trimmed_claims, "dropped_steps": a.dropped_steps,
                    "requeued": self._sched.requeued,
                    "cancelled_claims": self._sched.cancelled_claims,
                    "lookup_waits": self._sched.lookup_waits,
                    "lookup_wait_timeouts": self._sched.lookup_wait_timeouts}
        if self.loader is not None:
            ld = self.loader
            return {"role": "worker", "loaded_tokens": ld.loaded_tokens,
                    "load_errors": ld.failed, "saved_chunks": self.saver.saved,
                    "save_failures": self.saver.failed, "saves_flushed": self.saver.flushed,
                    "saves_dropped": self.saver.dropped, "transfers": ld.transfers,
                    "load_wait_s": ld.wait_s, "load_ready_wait_s": ld.ready_wait_s,
                    "loader_cpu_s": ld.cpu_s,
                    "transfer_s": ld.transfer_s, "transfer_byte_s": ld.transfer_byte_s}
        return None

    # ---------------------------------------------------------------- vLLM's metrics (stats.py)
    def get_kv_connector_stats(self):
        return self._deltas.take(self._stat_totals())

    def _stat_totals(self):
        if self._sched is not None:
            return {"hit_tokens": self._sched.hit_tokens,
                    "cancelled_claims": self._sched.cancelled_claims,
                    "lookup_waits": self._sched.lookup_waits,
                    "lookup_wait_timeouts": self._sched.lookup_wait_timeouts}
        if self.loader is None:
            return {}
        ld, ob = self.loader, self.layout.object_bytes
        return {"loaded_tokens": ld.loaded_tokens,
                "loaded_bytes": ld.loaded_tokens * ob // self.chunk_tokens,
                "load_seconds": ld.wait_s + ld.transfer_s, "loads": ld.transfers + ld.failed,
                "load_errors": ld.failed, "saved_bytes": self.saver.saved * ob,
                "save_failures": self.saver.failed}

    @classmethod
    def build_kv_connector_stats(cls, data=None):
        return TempoKVStats(data=dict(data or {}))

    @classmethod
    def build_prom_metrics(cls, vllm_config, metric_types, labelnames, per_engine_labelvalues):
        return TempoKVPromMetrics(vllm_config, metric_types, labelnames, per_engine_labelvalues)

    def _write_counters(self, force=False):
        now = time.monotonic()
        if not self.counters_file or (not force and now - self._counters_written < 0.25):
            return
        self._counters_written = now
        c = self.counters()
        if c is not None:
            c["pid"] = os.getpid()
            with open(self.counters_file, "a") as f:
                f.write(json.dumps(c) + "\n")
