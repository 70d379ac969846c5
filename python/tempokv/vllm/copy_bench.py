"""The worker's tier → KV-block copy rate, with and without host registration of the mapping.

    python -m tempokv.vllm.copy_bench [--device cuda|cpu] [--objects 64] [--repeat 3] [--busy]
                                      [--per-load 1] [--shuffle] [--path auto|direct|staged]
                                      [--threads N] [--switch-interval S]

Maps a file on /dev/shm read-only, as the worker maps tempokvd's tier, fills it with objects
in the connector's layout, and times ``KVLayout.load`` of every object into paged KV tensors of
the e2e model's geometry on the device (FlashAttention's layout on CUDA, the CPU backend's on
the CPU). On CUDA it runs twice: pageable mapping, then ``cudaHostRegister``-ed (read-only).
Prints one JSON line per run. Needs torch only (no vLLM, no daemon).

``--busy`` copies on a thread of its own while the main thread runs Python without pause, as
the connector's loader copies beside vLLM's engine loop: the GIL then changes hands at every
torch call, so this rate, not the idle one, is what a load sees in a serving process.
``--per-load N`` copies N objects per ``load_chunks`` call, as the loader copies a request's
chunks (default 1: one call per object). ``--shuffle`` places the objects' blocks in random
order (no two consecutive), as vLLM's block pool may after a while. ``--path`` forces the
direct or the staged copy (default: staged on CUDA, direct on the CPU). ``--threads N`` sets
torch's CPU threads (vLLM's CPU engine in the e2e check runs 1; on a busy 2-core machine two
threads made single copies 10-100x slower whenever one of them was descheduled).
``--switch-interval S`` sets Python's (``sys.setswitchinterval``, default 0.005 s): a longer one
magnifies what each GIL hand-over costs the copy beside ``--busy``, so the count of hand-overs
shows through a machine too busy to show the 5 ms ones.
"""

import argparse
import json
import mmap
import os
import sys
import tempfile
import threading
import time

import torch

from .layout import KVLayout, buffer_tensor, register_host

LAYERS, HEADS, DIM, BLOCK, CHUNK = 6, 4, 128, 128, 256


def kv_tensors(device, num_blocks):
    if device.type == "cuda":
        shape = (2, num_blocks, BLOCK, HEADS, DIM)
    else:
        shape = (num_blocks, HEADS, BLOCK, 2 * DIM)
    return {f"layer.{i}": torch.zeros(shape, dtype=torch.float32, device=device)
            for i in range(LAYERS)}


def _beside_busy_python(fn):
    """fn() on a thread of its own while this thread runs Python until it returns."""
    box, done = [None], threading.Event()

    def target():
        try:
            box[0] = fn()
        finally:
            done.set()

    t = threading.Thread(target=target)
    t.start()
    n = 0
    while not done.is_set():
        n += 1  # an engine loop with nothing to schedule
    t.join()
    return box[0]


def block_order(n, shuffle):
    """Block ids for n blocks: in order, or a random order without two consecutive ids."""
    if not shuffle:
        return list(range(n))
    g = torch.Generator().manual_seed(1)
    while True:
        ids = torch.randperm(2 * n, generator=g)[:n].tolist()
        if all(b - a != 1 for a, b in zip(ids, ids[1:])):
            return ids


def run(device, objects, repeat, register, busy=False, per_load=1, shuffle=False, path="auto"):
    bpc = CHUNK // BLOCK
    num_blocks = (2 if shuffle else 1) * objects * bpc + 1  # shuffle: ids from twice as many
    kv = kv_tensors(device, num_blocks)
    staged = None if path == "auto" else path == "staged"
    lay = KVLayout(kv, num_blocks, BLOCK, bpc, staged=staged)
    order = block_order(objects * bpc, shuffle)
    nbytes = lay.object_bytes * objects
    fd, path = tempfile.mkstemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        os.ftruncate(fd, nbytes)
        with mmap.mmap(fd, nbytes) as w:
            buffer_tensor(w).copy_(torch.randint(0, 256, (nbytes,), dtype=torch.uint8))
        m = mmap.mmap(fd, nbytes, access=mmap.ACCESS_READ)
        tier = buffer_tensor(m)
        registered = register_host(tier) if register else False

        def load_all():
            t = time.perf_counter()
            for start in range(0, objects, per_load):
                lay.load_chunks([(tier[i * lay.object_bytes:(i + 1) * lay.object_bytes],
                                  order[i * bpc:(i + 1) * bpc], 0)
                                 for i in range(start, min(objects, start + per_load))])
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            return time.perf_counter() - t

        times = sorted(_beside_busy_python(load_all) if busy else load_all()
                       for _ in range(repeat))
        best, median = times[0], times[len(times) // 2]
        ok = lay.block_bytes_of(order[-1]) == bytes(
            tier[nbytes - lay.block_bytes:].numpy())  # the last block: layer slices in order
        if registered:
            torch.cuda.cudart().cudaHostUnregister(tier.data_ptr())
        del tier
        m.close()
        return {"device": str(device), "registered": registered, "busy": busy,
                "path": "staged" if lay.staged else "direct", "per_load": per_load,
                "shuffle": shuffle, "threads": torch.get_num_threads(),
                "switch_interval_s": sys.getswitchinterval(), "objects": objects,
                "object_bytes": lay.object_bytes, "seconds": round(best, 4),
                "gib_s": round(nbytes / best / 2**30, 2),
                "median_gib_s": round(nbytes / median / 2**30, 2), "last_block_equal": ok}
    finally:
        os.close(fd)
        os.unlink(path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--objects", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--busy", action="store_true",
                    help="copy beside a thread that runs Python without pause (an engine loop)")
    ap.add_argument("--per-load", type=int, default=1,
                    help="objects per load_chunks call (the loader: a request's chunks)")
    ap.add_argument("--shuffle", action="store_true",
                    help="blocks in random order, none consecutive")
    ap.add_argument("--path", choices=["auto", "direct", "staged"], default="auto")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's)")
    ap.add_argument("--switch-interval", type=float, default=0,
                    help="Python's GIL switch interval in s (0: Python's, 0.005)")
    a = ap.parse_args(argv)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    if a.switch_interval > 0:
        sys.setswitchinterval(a.switch_interval)
    device = torch.device(a.device)
    for register in ([False, True] if device.type == "cuda" else [False]):
        print(json.dumps(run(device, a.objects, a.repeat, register, a.busy, max(1, a.per_load),
                             a.shuffle, a.path)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
