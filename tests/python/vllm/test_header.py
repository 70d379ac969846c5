"""The object header (tempokv.vllm.header): any byte changed, or a header of another key, rank,
layout or length, is refused; the layout digest follows what orders an object's bytes."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("xxhash")

from tempokv.vllm import header  # noqa: E402
from tempokv.vllm.identity import Rank  # noqa: E402
from tempokv.vllm.layout import KVLayout  # noqa: E402

KEY = (0x1111_2222_3333_4444, 0x5555_6666_7777_8888)
RANK = Rank(1, 2, 0, 1)
DIGEST = 0xABCD_EF01_2345_6789
PAYLOAD = 98304


def good():
    return header.pack(KEY, RANK, DIGEST, PAYLOAD, 0x0F0F)


def test_a_packed_header_is_64_bytes_and_checks_back_to_its_payload_checksum():
    h = good()
    assert len(h) == header.HEADER_BYTES == 64
    assert header.check(h, KEY, RANK, DIGEST, PAYLOAD) == 0x0F0F


@pytest.mark.parametrize("at", range(header.HEADER_BYTES))
def test_any_byte_of_the_header_changed_is_refused(at):
    h = bytearray(good())
    h[at] ^= 0x01
    with pytest.raises(header.HeaderMismatch):
        header.check(h, KEY, RANK, DIGEST, PAYLOAD)


@pytest.mark.parametrize("what,args", [
    ("key", ((KEY[0], KEY[1] ^ 1), RANK, DIGEST, PAYLOAD)),
    ("model", ((KEY[0] ^ 1, KEY[1]), RANK, DIGEST, PAYLOAD)),
    ("tp rank", (KEY, Rank(0, 2, 0, 1), DIGEST, PAYLOAD)),
    ("tp size", (KEY, Rank(1, 4, 0, 1), DIGEST, PAYLOAD)),
    ("pp stage", (KEY, Rank(1, 2, 1, 2), DIGEST, PAYLOAD)),
    ("layout", (KEY, RANK, DIGEST ^ 1, PAYLOAD)),
    ("length", (KEY, RANK, DIGEST, PAYLOAD - 64)),
])
def test_a_valid_header_of_another_identity_is_refused(what, args):
    with pytest.raises(header.HeaderMismatch):
        header.check(good(), *args)


def test_a_short_header_is_refused():
    with pytest.raises(header.HeaderMismatch):
        header.check(good()[:63], KEY, RANK, DIGEST, PAYLOAD)


def layout(shape_of, names=("a", "b"), dtype=torch.float32, bpc=2):
    kv = {n: torch.zeros(shape_of(8), dtype=dtype) for n in names}
    return KVLayout(kv, 8, 16, bpc)


def test_the_layout_digest_changes_with_what_orders_the_bytes_and_not_with_the_block_count():
    cpu = lambda n: (n, 2, 16, 128)  # noqa: E731  [blocks, heads, block, 2*head]
    flash = lambda n: (2, n, 16, 2, 64)  # noqa: E731  same bytes per block, K/V first
    base = header.layout_digest(layout(cpu))
    more_blocks = KVLayout({n: torch.zeros(12, 2, 16, 128) for n in ("a", "b")}, 12, 16, 2)
    assert header.layout_digest(more_blocks) == base
    assert header.layout_digest(layout(flash)) != base
    assert header.layout_digest(layout(cpu, dtype=torch.bfloat16)) != base
    assert header.layout_digest(layout(cpu, names=("b", "a"))) != base
    assert header.layout_digest(layout(cpu, bpc=4)) != base
