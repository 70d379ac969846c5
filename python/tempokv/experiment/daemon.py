"""One tempokvd per measured run, over a fresh copy of a precomputed store.

Every run's daemon serves the same endpoint (a socket outside the data directories), so the
engine's links find the next daemon where they found the last: the clients say hello again and
map the new instance's tier (``tempokv.vllm.link``). Stats come from the ``stats`` op; the
projection-error histograms from ``/metrics`` (``metrics_address`` on a free loopback port).
"""

import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request

from .. import TempoKVClient

# Tier and store sizes of the experiment (docs/evaluation.md, "On vLLM": the scaling).
BASE_FLAGS = [
    "--set", "tier.capacity_bytes=1GiB",
    "--set", "tier.budget_bytes=768MiB",
    "--set", "writes.region_bytes=256MiB",
    "--set", "store.segment_bytes=64MiB",
    "--set", "store.capacity_bytes=8GiB",
    "--set", "store.max_object_bytes=32MiB",
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    """tempokvd on ``data_dir`` serving ``endpoint``; ``flags`` are added to BASE_FLAGS."""

    def __init__(self, binary, data_dir, endpoint, flags=(), metrics=True):
        self.data_dir, self.endpoint = data_dir, endpoint
        self.sock = endpoint[len("ipc://"):]
        self.metrics_port = free_port() if metrics else None
        mflag = f"127.0.0.1:{self.metrics_port}" if metrics else ""
        os.makedirs(data_dir, exist_ok=True)
        self.log_path = os.path.join(data_dir, "tempokvd.log")
        self._log = open(self.log_path, "ab")
        if os.path.exists(self.sock):
            os.unlink(self.sock)  # a stale socket of a daemon that died
        self.proc = subprocess.Popen(
            [binary, "--data-dir", data_dir, "--metrics", mflag, "--set",
             f"server.endpoint={endpoint}"] + BASE_FLAGS + list(flags),
            stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not os.path.exists(self.sock):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"tempokvd did not start; its log:\n{self.log()[-4000:]}")
            time.sleep(0.05)

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stats(self):
        with TempoKVClient(self.endpoint, name="experiment", map_shared_memory=False) as c:
            return c.stats()

    def drained_stats(self, timeout_s=20.0):
        """Stats once no claim is live and nothing is protected or reserved (or at the
        timeout: the row then shows what was left)."""
        deadline = time.monotonic() + timeout_s
        while True:
            s = self.stats()
            if (live_claims(s) == 0 and not s.get("tier_protected_bytes")
                    and not s.get("tier_reserved_bytes")) or time.monotonic() > deadline:
                return s
            time.sleep(0.1)

    def histograms(self):
        """{name: [(le, cumulative count)]} of the tempokv_*_seconds histograms in /metrics."""
        if not self.metrics_port:
            return {}
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        text = urllib.request.urlopen(url, timeout=10).read().decode()
        out = {}
        pat = re.compile(r'^tempokv_(\w+)_seconds_bucket\{le="([^"]+)"\} (\S+)$')
        for line in text.splitlines():
            m = pat.match(line)
            if m:
                out.setdefault(m.group(1), []).append((m.group(2), float(m.group(3))))
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def live_claims(stats):
    return sum(v for k, v in stats.items()
               if k.startswith("claims_") and not k.endswith("_total"))


def copy_store(src_data_dir, dst_data_dir):
    """A fresh copy of a precomputed store: the run's saves never reach the cached one."""
    if os.path.exists(dst_data_dir):
        shutil.rmtree(dst_data_dir)
    os.makedirs(dst_data_dir)
    shutil.copytree(os.path.join(src_data_dir, "store"), os.path.join(dst_data_dir, "store"))
