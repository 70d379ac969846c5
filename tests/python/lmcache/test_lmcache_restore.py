"""LMCache (the experiment's ``lmcache`` policy) stores and restores on vLLM's CPU backend
across an engine restart (tempokv.experiment.lmcache_adapter, lmcache_kv).

Each pass is ``python -m tempokv.experiment.lmcache_check`` in a process of its own, in the
lmcache environment (scripts/install-lmcache; $TEMPOKV_LMCACHE_VENV, default
/opt/tempokv/venv-lmcache): the first computes two prompts and stores their whole chunks in an
``fs://`` directory, a fresh process restores them from it and must produce the same tokens,
and a third, on a copy of the store with one object's bytes changed, must not (the outputs
compared are able to tell restored KV from other KV). Exits 77 (ctest: skipped) without the
lmcache environment.
"""

import json
import os
import shutil
import subprocess

import pytest

from conftest import PYTHON


def run_pass(tmp_path, store, name):
    out, log = tmp_path / f"{name}.json", tmp_path / f"{name}.log"
    env = dict(os.environ, PYTHONHASHSEED="0")
    with open(log, "wb") as f:
        rc = subprocess.call([PYTHON, "-m", "tempokv.experiment.lmcache_check", "--store",
                              str(store), "--json", str(out)], stdout=f, stderr=f, env=env,
                             timeout=900)
    if rc != 0:
        tail = log.read_bytes()[-4000:].decode("utf-8", "replace")
        pytest.fail(f"pass {name} failed ({rc}):\n{tail}")
    return json.loads(out.read_text())


def corrupt_one_object(store):
    """Flips every byte of the second half of the first stored object (its V part)."""
    path = sorted(p for p in store.iterdir() if p.suffix == ".data")[0]
    data = bytearray(path.read_bytes())
    half = len(data) // 2
    data[half:] = bytes(b ^ 0xFF for b in data[half:])
    path.write_bytes(bytes(data))


def test_a_fresh_engine_restores_what_another_stored_with_identical_outputs(tmp_path):
    store = tmp_path / "store"
    stored = run_pass(tmp_path, store, "store")
    assert stored["stored"] and stored["counters"]["stores"] == len(stored["requests"])
    assert all(r["num_cached_tokens"] == 0 for r in stored["requests"])
    assert len(list(store.glob("*.data"))) == sum(stored["restorable_tokens"]) // 256

    restored = run_pass(tmp_path, store, "restore")
    got = [r["num_cached_tokens"] for r in restored["requests"]]
    assert got == restored["restorable_tokens"] and all(t > 0 for t in got)
    assert restored["counters"]["retrieved_tokens"] == sum(got)
    assert restored["counters"]["fs_reads"] == sum(got) // 256
    assert [r["tokens"] for r in restored["requests"]] == [r["tokens"] for r in
                                                          stored["requests"]]

    bad = tmp_path / "corrupted"
    shutil.copytree(store, bad)
    corrupt_one_object(bad)
    control = run_pass(tmp_path, bad, "corrupted")
    assert sum(r["num_cached_tokens"] for r in control["requests"]) == sum(got)
    assert [r["tokens"] for r in control["requests"]] != [r["tokens"] for r in
                                                         stored["requests"]]
