"""Link: one worker thread's lazily (re)connected TempoKVClient, with its mappings as tensors.

Each worker thread owns its own client (the client is not thread-safe), joined to the
scheduler's runtime so that it may retrieve the claims the scheduler reported. After a failure
the link stays down ``retry_s`` before the next hello, so a dead daemon costs one timeout per
second at most.
"""

import logging
import time

from ..client import TempoKVClient
from ..errors import TempoKVError
from .layout import buffer_tensor

__all__ = ["Link"]

log = logging.getLogger("tempokv.vllm")


class Link:
    """A lazily (re)connected client for one thread."""

    def __init__(self, endpoint, runtime, name, timeout_s, retry_s=1.0, token=""):
        self.args = dict(name=name, runtime=runtime, timeout_s=timeout_s, token=token)
        self.endpoint, self.retry_s = endpoint, retry_s
        self.client = None
        self.tier = self.write = None
        self._down_until = 0.0
        self.on_connect = None

    def get(self):
        if self.client is None and time.monotonic() >= self._down_until:
            try:
                self.client = TempoKVClient(self.endpoint, **self.args)
                self.tier = buffer_tensor(self.client.tier) if self.client.tier else None
                self.write = (buffer_tensor(self.client.write_region)
                              if self.client.write_region else None)
                if self.on_connect:
                    self.on_connect(self)
            except TempoKVError as e:
                log.warning("tempokv: cannot reach tempokvd at %s: %s", self.endpoint, e)
                self.drop()
        return self.client

    def drop(self):
        self.tier = self.write = None
        if self.client is not None:
            self.client.close(send_bye=False)
        self.client = None
        self._down_until = time.monotonic() + self.retry_s
