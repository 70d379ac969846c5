"""One tempokvd per measured run, over a fresh copy of a precomputed store.

Every run's daemon serves the same endpoint (a socket outside the data directories), so the
engine's links find the next daemon where they found the last: the clients say hello again and
map the new instance's tier (``tempokv.vllm.link``). The daemon process itself is
``tempokv.e2e.daemon.Daemon``; this module adds the experiment's sizes and the store copy.
"""

import os
import shutil

from ..e2e.daemon import Daemon

# Tier and store sizes of the experiment (docs/evaluation.md, "On vLLM": the scaling).
BASE_FLAGS = [
    "--set", "tier.capacity_bytes=1GiB",
    "--set", "tier.budget_bytes=768MiB",
    "--set", "writes.region_bytes=256MiB",
    "--set", "store.segment_bytes=64MiB",
    "--set", "store.capacity_bytes=8GiB",
    "--set", "store.max_object_bytes=32MiB",
]


def start(binary, data_dir, endpoint, flags=(), metrics=True):
    """tempokvd with the experiment's sizes plus ``flags`` on ``endpoint``."""
    return Daemon(binary, data_dir, BASE_FLAGS + list(flags), endpoint=endpoint, metrics=metrics)


def copy_store(src_data_dir, dst_data_dir):
    """A fresh copy of a precomputed store: the run's saves never reach the cached one."""
    if os.path.exists(dst_data_dir):
        shutil.rmtree(dst_data_dir)
    os.makedirs(dst_data_dir)
    shutil.copytree(os.path.join(src_data_dir, "store"), os.path.join(dst_data_dir, "store"))
