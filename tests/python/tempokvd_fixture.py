"""Starts and stops a real tempokvd for the Python client's tests.

The binary is $TEMPOKVD (default /work/main/build-lead/tools/tempokvd); a test module calls
require_daemon() at import time so that unittest skips it, with the reason, when the binary is
missing.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python")
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)

from tempokv.e2e.daemon import remove_shared_files  # noqa: E402

DEFAULT_TEMPOKVD = "/work/main/build-lead/tools/tempokvd"
HEARTBEAT_TIMEOUT_S = 2.0

DAEMON_FLAGS = [
    "--metrics", "",
    "--set", "tier.capacity_bytes=64MiB",
    "--set", "tier.budget_bytes=32MiB",
    "--set", "writes.region_bytes=64MiB",
    "--set", "store.segment_bytes=64MiB",
    "--set", "store.capacity_bytes=1GiB",
    # The default (256 MiB) does not fit a 64 MiB segment: the daemon refuses that config.
    "--set", "store.max_object_bytes=16MiB",
    "--set", "store.engine=threads",
    "--set", f"server.heartbeat_timeout_ms={int(HEARTBEAT_TIMEOUT_S * 1000)}",
]


def tempokvd_path():
    return os.environ.get("TEMPOKVD") or DEFAULT_TEMPOKVD


def require_daemon():
    """Raises unittest.SkipTest (skipping the importing module) without a tempokvd binary."""
    path = tempokvd_path()
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise unittest.SkipTest(
            f"tempokvd binary not found at {path} (set TEMPOKVD, or build it: "
            "ninja -C <build dir> tempokvd)")


def wait_until(predicate, what, timeout_s=10.0, poll=None):
    """predicate()'s first true value, asked every 20 ms (polling `poll`, a client, meanwhile);
    AssertionError naming `what` after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        if poll is not None:
            poll.poll(0.02)
        else:
            time.sleep(0.02)


class Daemon:
    """One tempokvd serving a fresh data directory on ipc://<data-dir>/tempokvd.sock."""

    def __init__(self, extra_flags=()):
        self.extra_flags = list(extra_flags)  # more --set flags
        self.data_dir = tempfile.mkdtemp(prefix="tempokv-py-")
        self.socket_path = os.path.join(self.data_dir, "tempokvd.sock")
        self.endpoint = "ipc://" + self.socket_path
        self.log_path = os.path.join(self.data_dir, "tempokvd.log")
        self._log = open(self.log_path, "wb")
        self._spawn()

    def restart(self):
        """SIGTERM, then a new tempokvd on the same data directory (its store is kept). Returns
        the old one's exit code."""
        code = self.stop()
        self._spawn()
        return code

    def _spawn(self):
        self.proc = subprocess.Popen([tempokvd_path(), "--data-dir", self.data_dir] + DAEMON_FLAGS
                                     + self.extra_flags,
                                     stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not os.path.exists(self.socket_path):
            failure = None
            if self.proc.poll() is not None:
                failure = f"tempokvd exited with {self.proc.returncode} before serving"
            elif time.monotonic() > deadline:
                failure = f"tempokvd did not create {self.socket_path}"
            if failure:
                log = self.log()
                self.cleanup()
                raise RuntimeError(f"{failure}:\n{log}")
            time.sleep(0.02)

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self, timeout_s=60):
        """SIGTERM, then the exit code (None if it had to be killed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
                return None
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def cleanup(self):
        # SIGTERM (the daemon removes its shared files); after a SIGKILL the files it recorded
        # are removed here, as the next daemon on this data directory would.
        self.stop(timeout_s=20)
        remove_shared_files(self.data_dir)
        self._log.close()
        shutil.rmtree(self.data_dir, ignore_errors=True)


def serve(extra_flags=()):
    """A pytest fixture's body (``yield from fx.serve(...)``): a Daemon with ``extra_flags`` for
    the test, cleaned up after it; the test is skipped, with the reason, where no tempokvd is
    built."""
    import pytest
    try:
        require_daemon()
    except Exception as e:
        pytest.skip(str(e))
    d = Daemon(extra_flags)
    yield d
    d.cleanup()


class DaemonTestCase(unittest.TestCase):
    """Each test gets its own daemon; tearDown stops it with SIGTERM and asserts exit code 0."""

    extra_flags = ()  # a subclass's more --set flags

    def setUp(self):
        self.daemon = Daemon(self.extra_flags)
        self.clients = []

    def tearDown(self):
        for c in self.clients:
            c.close()
        code = self.daemon.stop()
        log = self.daemon.log()
        self.daemon.cleanup()
        self.assertEqual(code, 0, f"tempokvd did not exit cleanly on SIGTERM:\n{log}")

    def client(self, **kwargs):
        from tempokv import TempoKVClient
        c = TempoKVClient(self.daemon.endpoint, **kwargs)
        self.clients.append(c)
        return c

    def wait_for(self, what, predicate, timeout_s=10.0, poll=None):
        return wait_until(predicate, what, timeout_s, poll)
