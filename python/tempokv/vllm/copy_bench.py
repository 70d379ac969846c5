"""The worker's tier → KV-block copy rate, with and without host registration of the mapping.

    python -m tempokv.vllm.copy_bench [--device cuda|cpu] [--objects 64] [--repeat 3] [--busy]

Maps a file on /dev/shm read-only, as the worker maps tempokvd's tier, fills it with objects
in the connector's layout, and times ``KVLayout.load`` of every object into paged KV tensors of
the e2e model's geometry on the device (FlashAttention's layout on CUDA, the CPU backend's on
the CPU). On CUDA it runs twice: pageable mapping, then ``cudaHostRegister``-ed (read-only).
Prints one JSON line per run. Needs torch only (no vLLM, no daemon).

``--busy`` copies on a thread of its own while the main thread runs Python without pause, as
the connector's loader copies beside vLLM's engine loop: the GIL then changes hands at every
torch call, so this rate, not the idle one, is what a load sees in a serving process.
"""

import argparse
import json
import mmap
import os
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


def run(device, objects, repeat, register, busy=False):
    bpc = CHUNK // BLOCK
    kv = kv_tensors(device, objects * bpc + 1)
    lay = KVLayout(kv, objects * bpc + 1, BLOCK, bpc)
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
            for i in range(objects):
                o = i * lay.object_bytes
                lay.load(tier[o:o + lay.object_bytes], list(range(i * bpc, (i + 1) * bpc)))
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            return time.perf_counter() - t

        times = sorted(_beside_busy_python(load_all) if busy else load_all()
                       for _ in range(repeat))
        best, median = times[0], times[len(times) // 2]
        ok = lay.block_bytes_of(bpc * objects - 1) == bytes(
            tier[nbytes - lay.block_bytes:].numpy())  # the last block: layer slices in order
        if registered:
            torch.cuda.cudart().cudaHostUnregister(tier.data_ptr())
        del tier
        m.close()
        return {"device": str(device), "registered": registered, "busy": busy,
                "objects": objects, "object_bytes": lay.object_bytes, "seconds": round(best, 4),
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
    a = ap.parse_args(argv)
    device = torch.device(a.device)
    for register in ([False, True] if device.type == "cuda" else [False]):
        print(json.dumps(run(device, a.objects, a.repeat, register, a.busy)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
