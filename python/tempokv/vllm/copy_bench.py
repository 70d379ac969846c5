"""The worker's tier → KV-block copy rate, with and without host registration of the mapping.

    python -m tempokv.vllm.copy_bench [--device cuda|cpu] [--objects 64] [--repeat 3]

Maps a file on /dev/shm read-only, as the worker maps tempokvd's tier, fills it with objects
in the connector's layout, and times ``KVLayout.load`` of every object into paged KV tensors of
the e2e model's geometry on the device (FlashAttention's layout on CUDA, the CPU backend's on
the CPU). On CUDA it runs twice: pageable mapping, then ``cudaHostRegister``-ed (read-only).
Prints one JSON line per run. Needs torch only (no vLLM, no daemon).
"""

import argparse
import json
import mmap
import os
import tempfile
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


def run(device, objects, repeat, register):
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
        best = None
        for _ in range(repeat):
            t = time.perf_counter()
            for i in range(objects):
                o = i * lay.object_bytes
                lay.load(tier[o:o + lay.object_bytes], list(range(i * bpc, (i + 1) * bpc)))
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            dt = time.perf_counter() - t
            best = dt if best is None else min(best, dt)
        ok = lay.block_bytes_of(bpc * objects - 1) == bytes(
            tier[nbytes - lay.block_bytes:].numpy())  # the last block: layer slices in order
        if registered:
            torch.cuda.cudart().cudaHostUnregister(tier.data_ptr())
        del tier
        m.close()
        return {"device": str(device), "registered": registered, "objects": objects,
                "object_bytes": lay.object_bytes, "seconds": round(best, 4),
                "gib_s": round(nbytes / best / 2**30, 2), "last_block_equal": ok}
    finally:
        os.close(fd)
        os.unlink(path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--objects", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    device = torch.device(a.device)
    for register in ([False, True] if device.type == "cuda" else [False]):
        print(json.dumps(run(device, a.objects, a.repeat, register)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
