"""tempokvd as a child process of the vLLM checks (scripts/vllm-e2e and the policy experiment):
started on a data directory, waited for until its socket exists, its stats read, stopped.

Only these drivers use it (tests have tests/python/tempokvd_fixture.py). ``endpoint`` None serves
the daemon's default socket in the data directory; an explicit ``ipc://`` endpoint outside it lets
successive daemons serve one endpoint (the experiment). With ``metrics`` /metrics listens on a
free loopback port and ``histograms()`` reads its tempokv_*_seconds histograms.
"""

import os
import json
import re
import socket
import stat
import subprocess
import time
import urllib.request

from .. import TempoKVClient

_SHARED_NAME = re.compile(r"tempokvd-[0-9a-f]{16}-(tier|writes|keys)")
_REGION_NAME = re.compile(r"rt-[0-9a-f]{32}")


def _own_file(path):
    """True for a regular file (not a symbolic link) of this user."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()


def remove_shared_files(data_dir):
    """Removes the shared files (tier, write regions, key filter) a tempokvd on ``data_dir``
    recorded in ``tempokvd.shared``, as the next daemon on that directory would: a SIGKILLed daemon
    leaves them on /dev/shm (1.25 GiB in the e2e check). Only names the daemon gives its files are
    removed (``tempokvd-<16 hex>-tier|writes|keys``, runtimes' ``rt-<32 hex>`` regions in the
    ``-writes`` directory), only regular files of this user, never through a symbolic link; each
    path on its own, so one that cannot be removed keeps no other. A missing list or file is not an
    error. Returns the paths it kept."""
    record = os.path.join(data_dir, "tempokvd.shared")
    if not _own_file(record):
        return []
    kept = []
    with open(record) as f:
        paths = f.read().split()
    for path in paths:
        name = os.path.basename(path)
        if not os.path.isabs(path) or not _SHARED_NAME.fullmatch(name):
            kept.append(path)
            continue
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        except OSError:
            kept.append(path)
            continue
        try:
            if stat.S_ISDIR(st.st_mode) and name.endswith("-writes") and st.st_uid == os.geteuid():
                for region in os.listdir(path):
                    inner = os.path.join(path, region)
                    if _REGION_NAME.fullmatch(region) and _own_file(inner):
                        os.unlink(inner)
                    else:
                        kept.append(inner)
                os.rmdir(path)
            elif _own_file(path):
                os.unlink(path)
            else:
                kept.append(path)
        except OSError:
            kept.append(path)
    try:
        os.unlink(record)
    except OSError:
        kept.append(record)
    return kept


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))


def default_tempokvd(build_dirs=("build/release", "build/debug", "build")):
    """The first tempokvd built in the checkout, in the order of ``build_dirs`` ("" if none)."""
    for d in build_dirs:
        p = os.path.join(REPO, d, "tools", "tempokvd")
        if os.access(p, os.X_OK):
            return p
    return ""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def live_claims(stats):
    """Claims the daemon holds in any state (the claims_* gauges, not the *_total counters)."""
    return sum(v for k, v in stats.items()
               if k.startswith("claims_") and not k.endswith("_total"))


def process_cpu_s(pid):
    """User + system CPU seconds of process ``pid``, all its threads (/proc/PID/stat fields 14
    and 15, after the command name, which may hold spaces)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Daemon:
    """tempokvd on ``data_dir`` with ``flags``; raises (with its log) when it does not start."""

    def __init__(self, binary, data_dir, flags=(), endpoint=None, metrics=False):
        self.data_dir = data_dir
        self.endpoint = endpoint or "ipc://" + os.path.join(data_dir, "tempokvd.sock")
        self.sock = self.endpoint[len("ipc://"):]
        self.metrics_port = free_port() if metrics else None
        args = [binary, "--data-dir", data_dir,
                "--metrics", f"127.0.0.1:{self.metrics_port}" if metrics else ""]
        if endpoint:
            args += ["--set", f"server.endpoint={endpoint}"]
        os.makedirs(data_dir, exist_ok=True)
        self.log_path = os.path.join(data_dir, "tempokvd.log")
        self._log = open(self.log_path, "ab")
        if os.path.exists(self.sock):
            os.unlink(self.sock)  # a stale socket of a daemon that died
        self.proc = subprocess.Popen(args + list(flags), stdout=self._log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not os.path.exists(self.sock):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"tempokvd did not start; its log:\n{self.log()[-4000:]}")
            time.sleep(0.05)

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def instance(self, name="vllm-check"):
        """The daemon instance's id, once it answers a hello (it is ready to serve)."""
        with TempoKVClient(self.endpoint, name=name, map_shared_memory=False) as c:
            return c.instance

    def stats(self, name="vllm-check"):
        with TempoKVClient(self.endpoint, name=name, map_shared_memory=False) as c:
            return c.stats()

    def drained_stats(self, timeout_s=20.0):
        """Stats once no claim is live and nothing is protected or reserved (or at the
        timeout: the caller then sees what was left)."""
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

    def claims(self):
        """The claims that ended, oldest first, from /claims: each one's timeline and the use
        time and TTR the controller projected at its commit. The daemon times them from its own
        start; they come back on ``time.monotonic()``'s clock (shifted by the daemon's ``now_s``
        against the monotonic time of the answer, off by the request's latency, ~1 ms)."""
        if not self.metrics_port:
            return []
        url = f"http://127.0.0.1:{self.metrics_port}/claims"
        sent = time.monotonic()
        answer = json.loads(urllib.request.urlopen(url, timeout=10).read())
        shift = (sent + time.monotonic()) / 2 - answer["now_s"]
        for c in answer["claims"]:
            for k, v in c.items():
                if k.endswith("_s") and k != "ttr_at_commit_s" and v is not None:
                    c[k] = v + shift
        return answer["claims"]

    def cpu_s(self):
        """CPU seconds (user + system) the daemon process has used so far (/proc/PID/stat)."""
        return process_cpu_s(self.proc.pid)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.returncode < 0:  # killed (the e2e check's killed pass SIGKILLs it)
            remove_shared_files(self.data_dir)
        self._log.close()
