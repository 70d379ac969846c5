"""The copies' CUDA ordering (streams.py) as it runs on the CPU: the same calls, no-ops; and the
link's mapping hooks, which register the tier and the write region with CUDA on a GPU and
unregister them before a new daemon's files are mapped."""

import time

import pytest

torch = pytest.importorskip("torch")

from tempokv import TempoKVClient  # noqa: E402
from tempokv.vllm.link import Link  # noqa: E402
from tempokv.vllm.streams import (CopyStream, compute_event, register_host,  # noqa: E402
                                  unregister_host)

import tempokvd_fixture as fx  # noqa: E402


def test_on_the_cpu_the_copy_streams_are_no_ops_around_the_same_copy():
    s = CopyStream("cpu")
    assert s.stream is None and compute_event("cpu") is None
    a, b = torch.arange(8, dtype=torch.uint8), torch.zeros(8, dtype=torch.uint8)
    with s.use():
        s.wait(compute_event("cpu"))
        b.copy_(a)
        s.finish()
    assert torch.equal(a, b)
    if not torch.cuda.is_available():
        assert register_host(a) is False and unregister_host(a) is False


def test_a_links_mappings_are_let_go_before_a_new_daemons_are_mapped(daemon):
    events = []
    link = Link(daemon.endpoint, "streams", "save", 2.0, retry_s=0.1)
    ptr = lambda t: None if t is None else t.data_ptr()  # noqa: E731
    link.on_connect = lambda lk: events.append(("map", ptr(lk.tier)))
    link.on_write_map = lambda write: events.append(("map_write", ptr(write)))
    link.on_unmap = lambda tier, write: events.append(("unmap", ptr(tier), ptr(write)))
    first = link.reach()
    assert first is not None and [e[0] for e in events] == ["map"]
    # The write region comes with the first reservation (the runtime's own, made then).
    link.client.abort_write(link.client.reserve_write(4096))
    assert link.write is not None
    assert [e[0] for e in events] == ["map", "map_write"]
    daemon.restart()
    with TempoKVClient(daemon.endpoint, name="probe", map_shared_memory=False) as probe:
        new = probe.instance
    deadline = time.monotonic() + 30
    while link.reach() != new and time.monotonic() < deadline:
        time.sleep(0.1)
    link.tier  # noqa: B018  (the link remaps on its next use)
    kinds = [e[0] for e in events]
    assert kinds[:3] == ["map", "map_write", "unmap"] and kinds[-1] == "map", events
    assert events[2][1:] == (events[0][1], events[1][1]), "the old mappings are the ones let go"
    link.drop()
    assert events[-1][0] == "unmap"
