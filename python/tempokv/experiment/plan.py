"""What an experiment runs: the scaled protocol (docs/evaluation.md, "On vLLM": the choices and
why), the prompts of each seed, the stores to precompute, and the list of measured runs."""

import hashlib
import json
import os
import random

from ..e2e import model as model_mod
from ..e2e.prompts import VOCAB_FIRST

SIX = ["demand", "immediate", "queue-1", "queue-4", "tempokv-static", "tempokv"]
RECOMPUTE = "recompute"  # vLLM with no connector: every prompt computed
# vLLM with LMCache's connector instead of TempoKV's (PyPI lmcache 0.5.6, its fs:// store read
# at the same cap; tempokv.experiment.lmcache_adapter), on an engine of its own in the same
# process, run in the lmcache environment (scripts/install-lmcache).
LMCACHE = "lmcache"
# LMCache's engine with an empty store (every prompt computed; LMCache looks up and stores):
# the recompute reference measured beside the lmcache runs, on their engine.
LMCACHE_COLD = "lmcache-cold"
LMCACHE_POLICIES = (LMCACHE, LMCACHE_COLD)
# Variants tempokvd also runs, measured on request: TempoKV with one mechanism off (the commit
# wait, the deadline chain, the order statistics, the state-aware TTR; tempokv-static above is
# TempoKV without error feedback).
VARIANTS = ["tempokv-no-wait", "tempokv-no-chain", "tempokv-no-order-stats",
            "tempokv-no-state-ttr"]

# The scaled protocol. "quick" is the ctest's and the demo's tiny version.
PROTOCOL = {
    "requests": 12,
    "prompt_min": 1536, "prompt_max": 2048,  # tokens, uniform
    "max_tokens": 32,  # output cap (ignore_eos: every request produces it)
    # Fixed arrivals (fig4) and the SSD read cap are set from this machine's speed, measured
    # when the engine starts (``scale``; docs/evaluation.md, "On vLLM": why): None here.
    # --interval-s sets one interval for every ratio, --read-bytes-per-s the cap, instead.
    "interval_s": None,
    "read_bytes_per_s": None,
    # Offered load of the fig4 arrivals by prefix ratio: the service a request needs (its
    # computed prompt tokens and its share of 4-sequence decode steps, at the measured costs)
    # over the arrival interval. Above 1 the slots queue, so requests have a lead to stage in.
    # At 2.5 (100 %) a prompt's reads (4 steps) took as long as an arrival interval: the reads
    # queued and even Demand held 0.42-0.72 x Immediate's C.
    "load": {1.0: 1.5, 0.5: 1.5},
    # Decode steps (4 sequences, measured) one mean prompt's whole KV takes to read at the cap:
    # staging is long against a step, yet twelve prompts' reads fit in their arrivals.
    "read_steps": 4.0,
    # The calibrated cap scales with the prefix ratio (cap_at): the stored part of a prompt then
    # takes as long to read at every ratio. At one cap for all, a 50 % prompt's half read in two
    # steps and every policy's p95 equalled Demand's within the noise (staging off the critical
    # path; docs/evaluation.md, "On vLLM"). An explicit --read-bytes-per-s holds at every ratio.
    "read_cap_scales_with_ratio": True,
    "ratios": [1.0, 0.5],
    "fig6_rates": [0.5, 1.0, 2.0, 4.0],  # requests per second
    "chunk_tokens": 256,
    "max_num_seqs": 4,
    "max_num_batched_tokens": 2048,
    "max_model_len": 4096,
    # Speed measurements taken while other processes used more than half a core are repeated
    # (10 s apart) up to this many times, the quietest kept (machine.pick).
    "calibration_attempts": 3,
}
# Calibrated as the full protocol is, so the ctest that runs it covers the speed probe, but
# measured once: it checks that the experiment runs (ctest runs two tests at a time, so its
# machine is never quiet), it is not a measurement.
QUICK = dict(PROTOCOL, requests=4, prompt_min=1024, prompt_max=1280, max_tokens=8,
             ratios=[1.0], fig6_rates=[1.0], calibration_attempts=1)


def read_cap_flags(cap):
    """tempokvd flags of a read cap in bytes/s (none for 0: the drive's own speed)."""
    if not cap:
        return []
    return ["--set", f"store.read_bytes_per_s={cap:.0f}",
            "--set", f"controller.prior_read_bytes_per_s={cap:.0f}"]


def cap_at(p, ratio):
    """The read cap of the runs at a prefix ratio: ``p['read_bytes_per_s']`` (the 100 % one),
    times the ratio when ``p['read_cap_scales_with_ratio']``; None while not calibrated."""
    cap = p["read_bytes_per_s"]
    if cap is None or not p.get("read_cap_scales_with_ratio"):
        return cap
    return cap * ratio


def calibrated(p):
    """Whether fig4's arrivals and the read cap come from the machine's measured speed."""
    return p["interval_s"] is None or p["read_bytes_per_s"] is None


def computed_tokens(prompt_sets, ratio, chunk):
    """Mean prompt tokens vLLM computes at a prefix ratio (what is not loaded), over every
    prompt of every seed (one interval per ratio for all seeds); at ratio 0, the mean prompt."""
    lens = [len(x) for ps in prompt_sets.values() for x in ps]
    return sum(n - stored_chunks(n, ratio, chunk) * chunk for n in lens) / len(lens)


def scale(p, prompt_sets, speed, kv_bytes_per_token):
    """The fig4 interval by ratio and the read cap from ``speed`` (``prefill_s_per_token``,
    ``decode_step_s``: the engine's probe): a request's service is its computed tokens plus
    max_tokens decode steps shared by max_num_seqs; the interval is that over the ratio's
    load. Values given in ``p`` stay. Returns ({ratio: interval_s}, read_bytes_per_s)."""
    tp, td = speed["prefill_s_per_token"], speed["decode_step_s"]
    chunk, decode = p["chunk_tokens"], p["max_tokens"] * td / p["max_num_seqs"]
    intervals = {}
    for ratio in p["ratios"]:
        if p["interval_s"] is not None:
            intervals[ratio] = interval_at(p, ratio)
            continue
        service = computed_tokens(prompt_sets, ratio, chunk) * tp + decode
        intervals[ratio] = service / load_at(p, ratio)
    cap = p["read_bytes_per_s"]
    if cap is None:
        mean_len = computed_tokens(prompt_sets, 0.0, chunk)  # nothing stored: whole prompts
        cap = mean_len * kv_bytes_per_token / (p["read_steps"] * td)
    return intervals, cap


def load_at(p, ratio):
    """The fig4 offered load at a prefix ratio (a ratio ``p['load']`` lacks takes the
    lightest load given: the longest interval, as interval_at)."""
    return _at_ratio(p["load"], ratio, min)


def _at_ratio(table, ratio, otherwise):
    """``table``'s value for ``ratio`` (keys may be JSON's strings); for a ratio it lacks,
    ``otherwise`` of all its values."""
    for r, v in table.items():
        if abs(float(r) - ratio) < 1e-9:
            return float(v)
    return otherwise(float(v) for v in table.values())


def interval_at(p, ratio):
    """The fig4 arrival interval at a prefix ratio: ``p['interval_s']`` is one number for every
    ratio or a dict by ratio (a ratio it lacks takes the longest interval given)."""
    iv = p["interval_s"]
    if iv is None:
        return None  # calibrated (scale)
    if not isinstance(iv, dict):
        return float(iv)
    return _at_ratio(iv, ratio, max)


def random_prompt(rng, n):
    """``n`` token ids drawn by ``rng`` from the model's ordinary vocabulary."""
    vocab = model_mod.GEOMETRY["vocab_size"]
    return [rng.randrange(VOCAB_FIRST, vocab) for _ in range(n)]


def prompts(seed, p):
    """``p['requests']`` distinct prompts (no shared prefixes), lengths uniform in
    [prompt_min, prompt_max], from ``seed``."""
    r = random.Random(1_000_003 * seed + 15)
    return [random_prompt(r, r.randint(p["prompt_min"], p["prompt_max"]))
            for _ in range(p["requests"])]


def stored_chunks(prompt_len, ratio, chunk):
    """Chunks stored for a prompt at a prefix ratio: the whole chunks of ratio × the prompt,
    never including the prompt's last token (vLLM must compute at least that one)."""
    return min(int(ratio * prompt_len) // chunk, (prompt_len - 1) // chunk)


def store_key(seed, ratio, p):
    ident = {"model": model_mod.VERSION, "geometry": model_mod.GEOMETRY, "seed": seed,
             "ratio": ratio, **{k: p[k] for k in ("requests", "prompt_min", "prompt_max",
                                                   "chunk_tokens")}}
    h = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:12]
    return f"s{seed}-r{int(ratio * 100)}-{h}"


def run_order(policies, seed, ratio, rate):
    """The policies of one (seed, ratio, rate) in an order drawn from them: on a shared machine
    whose load drifts over a run, a fixed order (TempoKV always last) would confound a policy
    with the time it ran at. The same arguments give the same order."""
    order = list(policies)
    random.Random(f"order-{seed}-{ratio:g}-{rate:g}").shuffle(order)
    return order


def repeat_order(order, repeat):
    """The policies' order in a repeat of one (seed, ratio, rate): reversed in every other
    repeat, so over two repeats a drift of the machine's speed that is linear in time favours
    no policy (each policy's mean run time is the middle of the group)."""
    return list(reversed(order)) if repeat % 2 else list(order)


def build(scenario, policies, seeds, p, cache_dir, repeats=1):
    """Returns (prompt_sets, stores to precompute, runs). With ``repeats`` > 1 each (seed,
    ratio, rate) runs its policies that many times in turn (``repeat_order``), each run named
    and marked by its ``repeat`` (0-based)."""
    prompt_sets, stores, runs = {}, [], []
    ratios = p["ratios"] if scenario == "fig4-policies" else [1.0]
    if not policies:
        policies = SIX if scenario == "fig4-policies" else [RECOMPUTE, "demand"]
    for seed in seeds:
        ps = prompts(seed, p)
        prompt_sets[str(seed)] = ps
        for ratio in ratios:
            key = store_key(seed, ratio, p)
            data_dir = os.path.join(cache_dir, key)
            ks = [stored_chunks(len(x), ratio, p["chunk_tokens"]) for x in ps]
            # Each stored prefix plus one token: every chunk of the prefix is then complete
            # and saved; the extra token is in a partial chunk, never saved.
            store = {"chunks": sum(ks), "prefixes": [x[:k * p["chunk_tokens"] + 1]
                                                     for x, k in zip(ps, ks) if k > 0]}
            if (any(pol not in (RECOMPUTE,) + LMCACHE_POLICIES for pol in policies)
                    and not os.path.isdir(data_dir)):
                stores.append(dict(store, key=key, data_dir=data_dir))
            # LMCache's store of the same prefixes (its own format, on its fs:// backend).
            lm_dir = data_dir + "-" + LMCACHE
            if LMCACHE in policies and not os.path.isdir(lm_dir):
                stores.append(dict(store, key=key + "-" + LMCACHE, data_dir=lm_dir,
                                   kind=LMCACHE))
            if scenario == "fig4-policies":
                iv = interval_at(p, ratio)
                rates = [None if iv is None else 1.0 / iv]
            else:
                rates = p["fig6_rates"]
            for rate in rates:
                tag = f"q{rate:g}" if rate is not None else "auto"
                order = run_order(policies, seed, ratio, rate or 0.0)
                for k in range(repeats):
                    for pol in repeat_order(order, k):
                        name = f"{scenario}-s{seed}-r{int(ratio * 100)}-{tag}-{pol}"
                        if repeats > 1:
                            name += f"-k{k}"
                        runs.append({"name": name, "scenario": scenario, "seed": seed,
                                     "ratio": ratio, "rate": rate, "repeat": k,
                                     "interval_s": None if rate is None else 1.0 / rate,
                                     "policy": "none" if pol == RECOMPUTE else pol,
                                     "label": pol, "prompts": str(seed),
                                     "store_dir": {LMCACHE: lm_dir, LMCACHE_COLD: None}.get(
                                         pol, data_dir)})
    return prompt_sets, stores, runs
