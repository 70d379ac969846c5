"""TempoKVClient's heartbeats: the background thread that keeps an idle session alive and
notices a daemon that is down or lost the session, and the heartbeat :meth:`poll` sends when
one is due.

A part of :class:`tempokv.client.TempoKVClient`, not a class to use alone.
"""

import threading
import time
import weakref

from . import errors
from .errors import FailedPrecondition, Unavailable
from .wire import session_gone


class Heartbeat:
    """The background heartbeat thread and the heartbeat that is due."""

    def _start_heartbeat(self):
        if self._background_heartbeat:
            self._heartbeat_thread = threading.Thread(
                target=Heartbeat._heartbeat_main, args=(weakref.ref(self), self._stop),
                name="tempokv-heartbeat", daemon=True)
            self._heartbeat_thread.start()

    def _heartbeat_if_due(self):
        interval = self.heartbeat_timeout_s / 3
        if interval > 0 and time.monotonic() - self._last_sent >= interval:
            self.heartbeat()

    @staticmethod
    def _heartbeat_main(ref, stop):
        """The background heartbeat: keeps an idle session alive and notices a daemon that is
        down or lost the session. Never runs callbacks. Holds the client only weakly, so a client
        nobody references is still collected (and its session ends)."""
        while True:
            client = ref()
            if client is None:
                return
            interval = client.heartbeat_timeout_s / 3
            with client._lock:
                wait_s = 1.0 if interval <= 0 else client._last_sent + interval - time.monotonic()
            del client
            if stop.wait(max(0.01, wait_s)):
                return
            client = ref()
            if client is None:
                return
            client._heartbeat_if_idle()
            del client

    def _heartbeat_if_idle(self):
        interval = self.heartbeat_timeout_s / 3
        if interval <= 0:  # a daemon without a heartbeat timeout needs none
            return
        with self._lock:
            if self._closed or not self._session_open or \
                    time.monotonic() - self._last_sent < interval:
                return
            try:
                self._exchange("heartbeat", {}, timeout_s=min(interval, 1.0), connect_wait=False)
                self._daemon_down = False
            except FailedPrecondition as e:
                if session_gone(e):
                    self._daemon_down = False
                    self._session_lost = True
            except Unavailable:
                self._daemon_down = True
            except errors.TempoKVError:
                pass
            finally:
                self._last_sent = time.monotonic()
