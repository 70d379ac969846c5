"""The vLLM process of the experiment: ONE engine for every policy (tempokv.experiment runs it).

    python -m tempokv.experiment.engine --spec SPEC.json --out OUT.json

For each seed whose stores are not cached it first precomputes them (every stored prefix run
once through the connector against a daemon on the cache directory: the saves are the store).
Then, for each run of the spec in order: a fresh ``tempokvd --policy P`` over a fresh copy of the
run's store on the one endpoint, a pause for the connector's links to find it, the requests
submitted at fixed intervals (independent of completions), every step driven here; then the
daemon's stats once it has drained, its error histograms, and the daemon stopped. Runs without
the connector (``policy: "none"``) use a second engine built after the connector runs.

No KV carries over between runs: vLLM's prefix cache is on (its default; the prompts of a run
share no prefix) and emptied after each run, every block is free after each run
(``kv_blocks_free_after``) and every token vLLM did not compute was loaded by the connector in
that run (``cached_equals_loaded``).
"""

import contextlib
import json
import os
import shutil
import sys
import time

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # scheduler + worker in-process
# GiB: 12 prompts of up to 2048 tokens at 24 KiB a token need 0.56 GiB (all loading at once).
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")

from ..e2e.daemon import live_claims  # noqa: E402
from ..e2e.llm import (agent, build_llm, close_llm, connector_counters, drive,  # noqa: E402
                       read_spec, scheduler, worker_connector)
from . import daemon as daemon_mod  # noqa: E402
from . import machine  # noqa: E402
from .plan import LMCACHE_POLICIES  # noqa: E402

READY_TIMEOUT_S = 60.0


def settle(llm, d):
    """After a new daemon started: waits until it answers a hello and every link of the
    connector has reached that instance: the scheduler's agent (round trips until its client,
    past its 1 s reconnect back-off, said hello to it, so that no hello happens inside the
    first arrival's lookup, which allows 0.25 s: a hello and a lookup on a busy machine missed
    it once, and that request and the next two were computed instead of loaded) and the
    worker's loader and saver links (a round trip on each one's thread: a link still
    connecting failed the first load after the switch). Fixed sleeps (1.7 s) did this before;
    they guessed."""
    a, w = agent(llm), worker_connector()
    if a is None:
        return
    inst = d.instance()
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        a.flush(10.0)
        reached = {"agent": a.daemon_instance}
        if w is not None:
            reached.update(loader=w.loader.reach(), saver=w.saver.reach())
        if all(i == inst for i in reached.values()):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the connector did not reach tempokvd instance {inst} within "
                               f"{READY_TIMEOUT_S:.0f} s: {reached}")
        time.sleep(0.1)


@contextlib.contextmanager
def connector_off(llm):
    """The engine as vLLM with no connector (the recompute baseline, without a second engine
    and its memory): the connector's scheduler side ignores the requests queued meanwhile (no
    lookup, claim, load or save) and the scheduler hands it no snapshots (no steps)."""
    s = scheduler(llm)
    side, snapshots = s.connector._sched, s._tempokv
    side.enabled, s._tempokv = False, None
    try:
        yield
    finally:
        side.enabled, s._tempokv = True, snapshots


def _llm(spec, connector):
    extra = None
    if connector:
        # The driver restarts the daemon between runs on purpose: links that found it down try
        # again after 0.1 s rather than the default 1 s (settle() waits until they reached it).
        extra = {"endpoint": spec["endpoint"], "chunk_tokens": spec["chunk_tokens"],
                 "load_timeout_s": 60.0, "retry_s": 0.1}
    return build_llm(spec, extra, prefix_caching=True)


def _blocks(llm):
    pool = scheduler(llm).kv_cache_manager.block_pool
    return {"kv_blocks_total": pool.num_gpu_blocks - 1,  # less the null block
            "kv_blocks_free_after": pool.get_num_free_blocks()}


def forget_cached(llm):
    """Empties vLLM's own prefix cache (every block free): the next run finds none of this
    one's KV there."""
    if not scheduler(llm).reset_prefix_cache():
        raise RuntimeError("vLLM refused to reset its prefix cache: blocks still in use")


def release_blocks(llm, rid_prefix, timeout_s=30.0):
    """Blocks of finished requests whose chunks the saver was still copying stay allocated
    until a later step hears they were sent; with every request finished nothing steps. One-
    token requests (no stored chunk: nothing to load or save) drive steps until every block is
    free. Returns the flush requests used."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    engine = llm.llm_engine
    sp = SamplingParams(temperature=0.0, max_tokens=1, ignore_eos=True)
    deadline = time.monotonic() + timeout_s
    n = 0
    while True:
        b = _blocks(llm)
        if b["kv_blocks_free_after"] == b["kv_blocks_total"] or time.monotonic() > deadline:
            forget_cached(llm)
            return n
        engine.add_request(f"{rid_prefix}-flush{n}", TokensPrompt(prompt_token_ids=[3, 4]), sp)
        n += 1
        while engine.has_unfinished_requests():
            engine.step()
        time.sleep(0.05)


def measure_speed(llm, spec, probes=2):
    """The engine's speed on this machine now, with the connector off (nothing claimed, loaded
    or saved): ``max_num_seqs`` prompts of the protocol's mean length, submitted at once with
    the output cap, ``probes`` times after one warm-up. ``prefill_s_per_token``: until the last
    first token, per prompt token (chunked prefill at the token budget); ``decode_step_s``:
    from then to the last finish, per step (the batch decoding). The mean over the probes."""
    import random

    from .plan import random_prompt

    p = spec["protocol"]
    n_tokens = (p["prompt_min"] + p["prompt_max"]) // 2
    r = random.Random(20261202)
    tps, tds, foreign = [], [], []
    for k in range(probes + 1):
        prompts = [random_prompt(r, n_tokens) for _ in range(p["max_num_seqs"])]
        load = machine.ForeignLoad()
        load.start()
        with connector_off(llm):
            res = drive(llm, prompts, p["max_tokens"], 0.0, f"speed{k}")
            release_blocks(llm, f"speed{k}")
        fc = load.stop()
        first = max(q["first_token_s"] for q in res)
        last = max(q["finished_s"] for q in res)
        if k > 0:  # the first one warms the engine up
            tps.append(first / sum(len(x) for x in prompts))
            tds.append((last - first) / max(1, p["max_tokens"] - 1))
            foreign.append(fc)
    known = [x for x in foreign if x is not None]
    return {"prefill_s_per_token": sum(tps) / len(tps), "decode_step_s": sum(tds) / len(tds),
            "probes": probes, "probe_prompt_tokens": n_tokens,
            # cores other processes used during the probes (the busiest probe's; None: unknown)
            "foreign_cores": max(known) if known else None}


def calibrate(llm, spec):
    """Sets what the protocol leaves to the machine (plan.scale): each fig4 run's interval and
    the read cap of every daemon. Returns the calibration for the result."""
    from ..e2e import model as model_mod
    from . import plan

    p = spec["protocol"]
    if not plan.calibrated(p):
        return None
    speed = machine.pick(lambda: measure_speed(llm, spec),
                         attempts=p.get("calibration_attempts", machine.ATTEMPTS))
    intervals, cap = plan.scale(p, spec["prompt_sets"], speed, model_mod.kv_bytes_per_token())
    p = dict(p, read_bytes_per_s=cap)
    for r in spec["runs"]:
        if r["interval_s"] is None:
            r["interval_s"] = intervals[r["ratio"]]
            r["rate"] = 1.0 / r["interval_s"]
        r["read_cap"] = plan.cap_at(p, r["ratio"])
        r["cap_flags"] = plan.read_cap_flags(r["read_cap"])
    return dict(speed, intervals_s={f"{k:g}": v for k, v in intervals.items()},
                read_bytes_per_s=cap,
                read_caps={f"{k:g}": plan.cap_at(p, k) for k in intervals})


def precompute(llm, spec, store):
    """Runs each stored prefix once (one output token) against a daemon on the cache
    directory: the connector saves every full chunk, which is the store."""
    tmp = store["data_dir"] + ".partial"
    if os.path.exists(tmp):
        import shutil
        shutil.rmtree(tmp)
    d = daemon_mod.start(spec["tempokvd"], tmp, spec["endpoint"],
                         ["--set", "controller.policy=demand"], metrics=False)
    try:
        settle(llm, d)
        before = connector_counters()
        drive(llm, store["prefixes"], 1, 0.0, f"pre{store['key']}")
        agent(llm).flush(30.0)
        deadline = time.monotonic() + 120
        want = before.get("saved_chunks", 0) + store["chunks"]
        while connector_counters().get("saved_chunks", 0) < want and time.monotonic() < deadline:
            time.sleep(0.2)
        saved = connector_counters().get("saved_chunks", 0) - before.get("saved_chunks", 0)
        stats = d.drained_stats()
        release_blocks(llm, f"pre{store['key']}")
    finally:
        d.stop()
    if saved != store["chunks"] or stats.get("store_objects") != store["chunks"]:
        raise RuntimeError(f"precompute of {store['key']}: {saved} chunks saved, "
                           f"{stats.get('store_objects')} stored, {store['chunks']} expected")
    os.rename(tmp, store["data_dir"])


class Phases(dict):
    """A run's wall time by phase: ``phases(name)`` ends phase ``name`` (since the last)."""

    def __init__(self):
        super().__init__()
        self._mark = time.monotonic()

    def __call__(self, name):
        now = time.monotonic()
        self[name] = now - self._mark
        self._mark = now


def measured_run(llm, spec, run, prompts):
    connector = run["policy"] != "none"
    d = data = None
    phases = phase = Phases()

    if connector:
        data = os.path.join(spec["work"], run["name"])
        daemon_mod.copy_store(run["store_dir"], data)
        phase("copy_store")
        flags = (["--set", f"controller.policy={run['policy']}"] + run.get("cap_flags", [])
                 + spec["daemon_flags"])
        d = daemon_mod.start(spec["tempokvd"], data, spec["endpoint"], flags)
        phase("daemon_start")
        settle(llm, d)
        phase("settle")
    before = connector_counters()
    ag = agent(llm) if connector else None
    errors_before = ag.errors if ag is not None else 0
    cpu = (time.process_time(), d.cpu_s() if d else None)
    t = time.monotonic()
    try:
        reqs = drive(llm, prompts, spec["max_tokens"], run["interval_s"], run["name"], t0=t)
        run_s = time.monotonic() - t
        phase("requests")
        # t0_s: the run's first arrival on CLOCK_MONOTONIC, the clock of tempokvd's /claims.
        entry = {"name": run["name"], "run_s": run_s, "requests": reqs, "t0_s": t,
                 "interval_s": run["interval_s"], "rate": run["rate"]}
        # CPU used while the requests ran: the engine's process (vLLM, the connector and its
        # threads) and the daemon's; on two cores what one takes the other may wait for.
        entry["engine_cpu_s"] = time.process_time() - cpu[0]
        entry["daemon_cpu_s"] = d.cpu_s() - cpu[1] if d else None
        entry["flush_requests"] = release_blocks(llm, run["name"])
        phase("release_blocks")
        after = connector_counters()
        entry["connector"] = {k: after[k] - before.get(k, 0) for k in after}
        entry.update(_blocks(llm))
        if connector:
            ag.flush(30.0)
            entry["agent_errors"] = ag.errors - errors_before
            stats = d.drained_stats()
            entry["daemon_stats"] = stats
            entry["daemon_live_claims_after"] = live_claims(stats)
            entry["histograms"] = d.histograms()
            entry["claims"] = d.claims()
            phase("drain_and_collect")
    finally:
        if d is not None:
            d.stop()
            phase("daemon_stop")
        if data is not None and not spec.get("keep"):
            # Bounded: one run's store copy (0.5 GiB at ratio 1) at a time, not every run's.
            shutil.rmtree(data, ignore_errors=True)
            phase("remove_store")
    # Where a run's wall time goes besides its requests (the experiment's length).
    entry["phases_s"] = dict(phases)
    return entry


def run(spec, out_path=None):
    """Runs the spec; with ``out_path`` the results so far are written after every run, so a
    process killed midway (the OOM killer on a shared machine) leaves its finished runs."""
    out = {"precomputed": [], "runs": [], "init_s": {}}

    def save():
        if out_path:
            with open(out_path + ".tmp", "w") as f:
                json.dump(out, f)
            os.replace(out_path + ".tmp", out_path)

    def measure(runs, measure_one):
        """``measure_one(run, prompts)`` for each run, saved after each."""
        for r in runs:
            out["runs"].append(measure_one(r, spec["prompt_sets"][r["prompts"]]))
            save()
            print(f"tempokv experiment: {r['name']} done in {out['runs'][-1]['run_s']:.1f} s",
                  flush=True)

    def precompute_all(kind, precompute_one):
        """``precompute_one(store)`` for each store of ``kind`` (None: TempoKV's)."""
        for store in spec["stores"]:
            if store.get("kind") != kind:
                continue
            t = time.monotonic()
            precompute_one(store)
            out["precomputed"].append({"key": store["key"], "s": time.monotonic() - t})
            print(f"tempokv experiment: store {store['key']} precomputed in "
                  f"{time.monotonic() - t:.1f} s", flush=True)

    conn_runs = [r for r in spec["runs"] if r["policy"] not in ("none",) + LMCACHE_POLICIES]
    plain_runs = [r for r in spec["runs"] if r["policy"] == "none"]
    lm_runs = [r for r in spec["runs"] if r["policy"] in LMCACHE_POLICIES]
    # One engine for every run (a second one, for the runs without the connector, cost ~3 GiB
    # more at its peak and fig6 was OOM-killed on the shared machine): the recompute runs use
    # it with the connector switched off. LMCache's runs need its connector: an engine of
    # their own, built once this one is closed.
    t = time.monotonic()
    llm = _llm(spec, True)
    out["init_s"]["connector"] = time.monotonic() - t
    precompute_all(None, lambda store: precompute(llm, spec, store))
    t = time.monotonic()
    out["calibration"] = calibrate(llm, spec)
    if out["calibration"]:
        c = out["calibration"]
        print(f"tempokv experiment: speed measured in {time.monotonic() - t:.1f} s: prefill "
              f"{c['prefill_s_per_token'] * 1e3:.3f} ms/token, decode step "
              f"{c['decode_step_s'] * 1e3:.1f} ms; fig4 intervals {c['intervals_s']} s, read caps "
              + ", ".join(f"{k}: {v / 1e6:.0f} MB/s" for k, v in c["read_caps"].items()),
              flush=True)
    measure_one = lambda r, prompts: measured_run(llm, spec, r, prompts)  # noqa: E731
    measure(conn_runs, measure_one)
    if plain_runs:
        with connector_off(llm):
            measure(plain_runs, measure_one)
    close_llm(llm)
    if lm_runs:
        from . import lmcache_runs
        lmcache_runs.run(spec, lm_runs, out, precompute_all, measure)
    return out


def main(argv=None):
    spec, out_path = read_spec(argv)
    import vllm
    out = run(spec, out_path)
    out["vllm_version"] = vllm.__version__
    with open(out_path, "w") as f:
        json.dump(out, f)
    if any(r["policy"] in LMCACHE_POLICIES for r in spec["runs"]):
        # LMCache 0.5.6's threads keep the interpreter from exiting after vLLM's shutdown;
        # its writes have ended (lmcache_runs waits for them after every run).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
