"""Whether the machine was quiet while the engine measured its speed.

The protocol's arrivals and read caps are scaled to the engine's speed measured at start
(``engine.measure_speed``). Measured while other processes used the cores, it scales every run
to an engine slower than the one that then serves most of them (docs/evaluation.md, "On
vLLM": a probe during a build measured a 34.9 ms decode step against 17.3 ms quiet, and the whole
experiment ran at half its offered load). So each probe also measures how many cores *other*
processes used meanwhile (the machine's busy time from /proc/stat less this process's own CPU
time; the engine runs in this process, VLLM_ENABLE_V1_MULTIPROCESSING=0 in engine.py), and
``pick`` repeats a busy measurement and keeps the quietest.
"""

import os
import time

# Cores other processes may use during a probe before it counts as taken on a busy machine.
# The engine computes on one thread (OMP_NUM_THREADS=1); on a quiet machine the rest of the
# system uses a few hundredths of a core.
BUSY_CORES = 0.5
ATTEMPTS = 3
PAUSE_S = 10.0


def busy_seconds(stat_text, ticks_per_s):
    """CPU seconds every core has spent busy since boot, from /proc/stat's ``cpu`` line: user,
    nice, system, irq, softirq and steal (not idle or iowait; guest time is already in user)."""
    for line in stat_text.splitlines():
        f = line.split()
        if f and f[0] == "cpu":
            v = [int(x) for x in f[1:]]
            v += [0] * (8 - len(v))
            user, nice, system, _idle, _iowait, irq, softirq, steal = v[:8]
            return (user + nice + system + irq + softirq + steal) / ticks_per_s
    raise ValueError("/proc/stat has no cpu line")


class ForeignLoad:
    """Cores used by other processes between ``start()`` and ``stop()`` (None where /proc/stat
    cannot be read)."""

    def __init__(self, read_stat=None, ticks_per_s=None):
        self._read = read_stat or _read_proc_stat
        self._ticks = ticks_per_s or os.sysconf("SC_CLK_TCK")
        self._t0 = None

    def _sample(self):
        try:
            busy = busy_seconds(self._read(), self._ticks)
        except (OSError, ValueError):
            busy = None
        return busy, time.process_time(), time.monotonic()

    def start(self):
        self._t0 = self._sample()

    def stop(self):
        (b0, c0, w0), (b1, c1, w1) = self._t0, self._sample()
        if b0 is None or b1 is None or w1 <= w0:
            return None
        return max(0.0, ((b1 - b0) - (c1 - c0)) / (w1 - w0))


def _read_proc_stat():
    with open("/proc/stat") as f:
        return f.read()


def pick(measure, attempts=ATTEMPTS, busy_cores=BUSY_CORES, pause_s=PAUSE_S, sleep=time.sleep,
         say=print):
    """``measure()`` (a speed dict with ``foreign_cores``) until one is quiet (foreign cores at
    most ``busy_cores``, or unknown), at most ``attempts`` times, pausing ``pause_s`` between.
    Returns the quietest with ``attempts`` (how many were taken) and ``busy`` (True when even
    that one was not quiet: the experiment then runs on it, and says so)."""
    tried = []
    for k in range(attempts):
        m = measure()
        tried.append(m)
        fc = m.get("foreign_cores")
        if fc is None or fc <= busy_cores:
            break
        say(f"tempokv experiment: other processes used {fc:.2f} cores while the engine "
            f"measured its speed (at most {busy_cores:g} counts as quiet)"
            + (f"; measuring again in {pause_s:g} s" if k + 1 < attempts else ""), flush=True)
        if k + 1 < attempts:
            sleep(pause_s)
    best = min(tried, key=lambda m: m.get("foreign_cores") or 0.0)
    fc = best.get("foreign_cores")
    busy = fc is not None and fc > busy_cores
    if busy:
        say(f"tempokv experiment: WARNING: calibrated on a busy machine ({fc:.2f} cores used by "
            "other processes): arrivals and read caps are scaled to a slower engine than a quiet "
            "machine's", flush=True)
    return dict(best, attempts=len(tried), busy=busy)
