"""Link: one worker thread's lazily (re)connected TempoKVClient, with its mappings as tensors.

Each worker thread owns its own client (the client is not thread-safe), joined to the
scheduler's runtime so that it may retrieve the claims the scheduler reported. After a failure
the link stays down ``retry_s`` before the next hello, so a dead daemon costs one timeout per
second at most.

When the client recovers by itself (a call found the session gone: the daemon restarted, or a
new daemon now serves the endpoint), it maps the new instance's tier and write region; ``tier``
and ``write`` then rebuild their tensors over the new mappings (and ``on_connect`` runs again),
so a copy never reads the old instance's tier.
"""

import logging
import threading
import time

from ..client import TempoKVClient
from ..errors import TempoKVError
from .layout import buffer_tensor

__all__ = ["Link"]

log = logging.getLogger("tempokv.vllm")


class Link:
    """A lazily (re)connected client for one thread."""

    def __init__(self, endpoint, runtime, name, timeout_s, retry_s=1.0, token="", settings=None,
                 put_timeout_s=30.0):
        # settings: the runtime's hello settings (max_active, token_budget, async_loads), in
        # case this link's hello creates the runtime.
        self.args = dict(name=name, runtime=runtime, timeout_s=timeout_s, token=token,
                         put_timeout_s=put_timeout_s, **(settings or {}))
        self.endpoint, self.retry_s = endpoint, retry_s
        self.client = None
        self._tier = self._write = self._write_src = None
        self._mapped_at = None  # the client's recoveries count when the tensors were made
        self._down_until = 0.0
        self.on_connect = None  # (link): after the daemon's tier is mapped
        # (write): after the runtime's write region is mapped (at the client's first
        # reserve_write, not at the hello: the daemon makes the region then)
        self.on_write_map = None
        self.on_unmap = None  # (tier, write): the old tensors, before they are let go

    @property
    def tier(self):
        self._remap_if_recovered()
        return self._tier

    @property
    def write(self):
        self._remap_if_recovered()
        c = self.client
        # The runtime's write region is mapped at the client's first reserve_write.
        if c is not None and c.write_region is not None and self._write_src is not c.write_region:
            if self._write is not None and self.on_unmap:
                self.on_unmap(None, self._write)
            self._write_src = c.write_region
            self._write = buffer_tensor(c.write_region)
            if self.on_write_map:
                self.on_write_map(self._write)
        return self._write

    def _map(self):
        self._unmap()
        c = self.client
        self._tier = buffer_tensor(c.tier) if c.tier else None
        self._write_src = self._write = None  # mapped on first use (the write property)
        self._mapped_at = c.recoveries
        if self.on_connect:
            self.on_connect(self)

    def _remap_if_recovered(self):
        c = self.client
        if c is not None and self._mapped_at != c.recoveries:
            self._map()

    def get(self):
        if self.client is None and time.monotonic() >= self._down_until:
            try:
                self.client = TempoKVClient(self.endpoint, **self.args)
                self._map()
            except TempoKVError as e:
                log.warning("tempokv: cannot reach tempokvd at %s: %s", self.endpoint, e)
                self.drop()
        return self.client

    def reach(self):
        """A round trip from the owning thread (a hello first when the link is down or the
        daemon changed): the daemon instance reached, or None (the link is then dropped and
        retried after ``retry_s``)."""
        c = self.get()
        if c is None:
            return None
        try:
            c.heartbeat()
            return c.instance
        except TempoKVError as e:
            log.warning("tempokv: tempokvd at %s: %s", self.endpoint, e)
            self.drop()
            return None

    def _unmap(self):
        if self.on_unmap and (self._tier is not None or self._write is not None):
            self.on_unmap(self._tier, self._write)
        self._tier = self._write = None

    def drop(self):
        self._unmap()
        self._mapped_at = None
        if self.client is not None:
            self.client.close(send_bye=False)
        self.client = None
        self._down_until = time.monotonic() + self.retry_s


class ReachRequest:
    """``Link.reach`` asked of the thread that owns a link, from any other: the asker queues
    it in the owner's way and calls ``wait``; the owner calls ``answer`` between its own round
    trips (a link is used by one thread only). A driver that starts a new daemon on the
    endpoint asks until the link has reached the new one, so that the first load or save after
    the switch does not find the link still connecting (a retrieval then failed: "no
    connection took the request")."""

    def __init__(self):
        self._done = threading.Event()
        self._instance = None

    def answer(self, link):
        self._instance = link.reach()
        self._done.set()

    def wait(self, timeout_s):
        """The daemon instance the owner's link reached, or None (not reached, or no answer
        within ``timeout_s``)."""
        self._done.wait(timeout_s)
        return self._instance
