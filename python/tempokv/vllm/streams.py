"""The loader's and the saver's copies on CUDA streams of their own, ordered against vLLM's
compute stream by events; on the CPU every call here is a no-op, so the same copy code runs
(and is tested) with CPU tensors.

* A save reads blocks the step's forward pass wrote on vLLM's compute stream. ``wait_for_save``
  runs on the engine thread right after that pass: ``compute_event`` records an event on the
  compute stream there, and the saver's stream waits on it (``CopyStream.wait``) before its copy:
  a save never reads a block before the forward that writes it has run, whatever stream vLLM
  computes on, and never stalls the compute stream.
* A load writes blocks of a request that vLLM runs only after ``finished_recving``; the loader
  reports it once its stream's event has completed (``CopyStream.finish``: that event only,
  not a whole-device or default-stream synchronize that would wait for vLLM's kernels).
* The saver's device-to-host copies land in the write region, the loader's host-to-device copies
  come from the tier: both mappings are registered with CUDA (``cudaHostRegister``, page-locked:
  copies are DMA at full rate and truly asynchronous) and unregistered before the link maps a
  new daemon's files (``Link.on_unmap``).
"""

import contextlib

import torch

__all__ = ["CopyStream", "compute_event", "register_host", "unregister_host"]


class CopyStream:
    """A CUDA stream for one thread's copies (None on the CPU)."""

    def __init__(self, device):
        self.device = torch.device(device)
        self.stream = (torch.cuda.Stream(device=self.device)
                       if self.device.type == "cuda" else None)

    def use(self):
        """Context: the thread's copies go to this stream."""
        return torch.cuda.stream(self.stream) if self.stream is not None else \
            contextlib.nullcontext()

    def wait(self, event):
        """Later copies on this stream start after ``event`` (recorded elsewhere)."""
        if self.stream is not None and event is not None:
            self.stream.wait_event(event)

    def finish(self):
        """Blocks this thread until the copies queued on this stream so far are done."""
        if self.stream is not None:
            ev = torch.cuda.Event()
            ev.record(self.stream)
            ev.synchronize()


def compute_event(device):
    """An event on the calling thread's current stream (vLLM's compute stream, called from the
    engine thread), or None on the CPU."""
    device = torch.device(device)
    if device.type != "cuda":
        return None
    ev = torch.cuda.Event()
    ev.record(torch.cuda.current_stream(device))
    return ev


def register_host(t, read_only=True):
    """Pins a mapping (uint8 tensor over it) for CUDA copies; False when CUDA refuses or is
    absent (copies then stage through pageable memory: slower, still correct)."""
    if t is None or not torch.cuda.is_available():
        return False
    flags = 0x08 if read_only else 0x00  # cudaHostRegisterReadOnly: the tier is mapped PROT_READ
    err = torch.cuda.cudart().cudaHostRegister(t.data_ptr(), t.numel(), flags)
    return int(err[0] if isinstance(err, tuple) else err) == 0


def unregister_host(t):
    """Undoes ``register_host`` (before the mapping goes: its range may be mapped again)."""
    if t is None or not torch.cuda.is_available():
        return False
    err = torch.cuda.cudart().cudaHostUnregister(t.data_ptr())
    return int(err[0] if isinstance(err, tuple) else err) == 0
