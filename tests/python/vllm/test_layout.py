"""KVLayout: chunk objects copied to and from vLLM's paged KV tensors, whatever their layout."""

import pytest

torch = pytest.importorskip("torch")

from tempokv.vllm.layout import KVLayout  # noqa: E402

NUM_BLOCKS, BLOCK, HEADS, DIM, LAYERS = 12, 4, 2, 8, 3


def cpu_layout():  # vLLM's CPU backend: [num_blocks, kv_heads, block_size, 2 * head_size]
    return {f"l{i}": torch.randn(NUM_BLOCKS, HEADS, BLOCK, 2 * DIM) for i in range(LAYERS)}


def flash_layout():  # FlashAttention: [2, num_blocks, block_size, kv_heads, head_size]
    return {f"l{i}": torch.randn(2, NUM_BLOCKS, BLOCK, HEADS, DIM) for i in range(LAYERS)}


@pytest.mark.parametrize("make,block_dim", [(cpu_layout, 0), (flash_layout, 1)])
def test_a_saved_chunk_loads_into_other_blocks_bit_for_bit(make, block_dim):
    kv = make()
    lay = KVLayout(kv, NUM_BLOCKS, BLOCK, blocks_per_chunk=2)
    assert lay.layers[0].block_dim == block_dim
    assert lay.object_bytes == 2 * LAYERS * HEADS * BLOCK * 2 * DIM * 4
    obj = torch.zeros(lay.object_bytes, dtype=torch.uint8)
    lay.save([3, 7], obj)
    before = {b: lay.block_bytes_of(b) for b in range(NUM_BLOCKS)}
    lay.load(obj, [9, 1])
    assert lay.block_bytes_of(9) == before[3] and lay.block_bytes_of(1) == before[7]
    for b in set(range(NUM_BLOCKS)) - {9, 1}:
        assert lay.block_bytes_of(b) == before[b], f"block {b} was touched"


def test_load_skips_blocks_already_computed():
    kv = cpu_layout()
    lay = KVLayout(kv, NUM_BLOCKS, BLOCK, blocks_per_chunk=2)
    obj = torch.zeros(lay.object_bytes, dtype=torch.uint8)
    lay.save([0, 1], obj)
    keep = lay.block_bytes_of(5)
    lay.load(obj, [5, 6], first=1)
    assert lay.block_bytes_of(5) == keep
    assert lay.block_bytes_of(6) == lay.block_bytes_of(1)


def test_wrong_sizes_and_block_ids_are_refused():
    lay = KVLayout(cpu_layout(), NUM_BLOCKS, BLOCK, blocks_per_chunk=2)
    with pytest.raises(ValueError):
        lay.load(torch.zeros(lay.object_bytes - 1, dtype=torch.uint8), [0, 1])
    with pytest.raises(ValueError):
        lay.load(torch.zeros(lay.object_bytes, dtype=torch.uint8), [0, NUM_BLOCKS])
    with pytest.raises(ValueError):
        lay.save([0], torch.zeros(lay.object_bytes, dtype=torch.uint8))


def test_tensors_without_a_block_dimension_are_refused():
    with pytest.raises(ValueError, match="blocks"):
        KVLayout({"l0": torch.zeros(5, 5)}, NUM_BLOCKS, BLOCK, 1)


# --- the copy against the first version's per-block copies (kept here as the reference) ---

def reference_load(lay, obj, block_ids, first=0):
    for j in range(first, len(block_ids)):
        for layer in lay.layers:
            a = j * lay.block_bytes + layer.offset
            src = obj[a:a + layer.nbytes].view(layer.tensor.dtype).view(layer.shape)
            layer.tensor.select(layer.block_dim, block_ids[j]).copy_(src)


def reference_save(lay, block_ids, obj):
    for j, b in enumerate(block_ids):
        for layer in lay.layers:
            a = j * lay.block_bytes + layer.offset
            obj[a:a + layer.nbytes].view(layer.tensor.dtype).view(layer.shape).copy_(
                layer.tensor.select(layer.block_dim, b))


def random_kv(shape, dtype, gen, permute=None):
    """KV tensors of random bytes (NaN patterns included: compared as bytes)."""
    n = 1
    for s in shape:
        n *= s
    size = torch.tensor([], dtype=dtype).element_size()
    out = {}
    for i in range(LAYERS):
        t = torch.randint(0, 256, (n * size,), dtype=torch.uint8, generator=gen)
        t = t.view(dtype).view(shape)
        out[f"l{i}"] = t.permute(*permute) if permute else t
    return out


def same_bytes(a, b):
    return torch.equal(a.contiguous().view(-1).view(torch.uint8),
                       b.contiguous().view(-1).view(torch.uint8))


def clone_kv(kv):
    return {n: t.clone() if t.is_contiguous() else t.permute(*range(t.dim())).clone(
        memory_format=torch.preserve_format) for n, t in kv.items()}


GEOMETRIES = {  # name: (shape, permutation applied to it, block dim of the result)
    "cpu": ((NUM_BLOCKS, HEADS, BLOCK, 2 * DIM), None, 0),
    "flash": ((2, NUM_BLOCKS, BLOCK, HEADS, DIM), None, 1),
    # not contiguous (a backend's stride order): a view per block and layer
    "flash-hnd": ((2, NUM_BLOCKS, HEADS, BLOCK, DIM), (0, 1, 3, 2, 4), 1),
}


def random_chunk_ids(gen, bpc, runs):
    """Distinct block ids in random order; with ``runs`` some are consecutive."""
    perm = torch.randperm(NUM_BLOCKS, generator=gen).tolist()
    if not runs:
        return perm[:bpc]
    start = perm[0] % (NUM_BLOCKS - bpc + 1)
    ids = list(range(start, start + bpc // 2)) + [b for b in perm if not
                                                  start <= b < start + bpc // 2]
    return ids[:bpc]


@pytest.mark.parametrize("geometry", sorted(GEOMETRIES))
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("staged", [False, True])
def test_load_and_save_equal_the_per_block_copies_byte_for_byte(geometry, dtype, staged):
    shape, permute, block_dim = GEOMETRIES[geometry]
    gen = torch.Generator().manual_seed(hash((geometry, str(dtype), staged)) % 2**31)
    for bpc in (1, 3, 4):
        for trial in range(6):
            kv = random_kv(shape, dtype, gen, permute)
            ref = clone_kv(kv)
            lay = KVLayout(kv, NUM_BLOCKS, BLOCK, bpc, staged=staged)
            ref_lay = KVLayout(ref, NUM_BLOCKS, BLOCK, bpc)
            assert lay.layers[0].block_dim == block_dim
            ids = random_chunk_ids(gen, bpc, runs=trial % 2 == 1)
            first = trial % (bpc + 1)
            obj = torch.randint(0, 256, (lay.object_bytes,), dtype=torch.uint8, generator=gen)
            lay.load(obj, ids, first)
            reference_load(ref_lay, obj, ids, first)
            for n in kv:
                assert same_bytes(kv[n], ref[n]), (bpc, ids, first, n)
            got = torch.zeros(lay.object_bytes, dtype=torch.uint8)
            want = torch.ones(lay.object_bytes, dtype=torch.uint8)
            save_ids = random_chunk_ids(gen, bpc, runs=trial % 2 == 0)
            lay.save(save_ids, got)
            reference_save(ref_lay, save_ids, want)
            assert torch.equal(got, want), (bpc, save_ids)


@pytest.mark.parametrize("staged", [False, True])
def test_several_chunks_in_one_load_equal_one_load_per_chunk(staged):
    gen = torch.Generator().manual_seed(7)
    kv = random_kv(GEOMETRIES["cpu"][0], torch.bfloat16, gen)
    ref = clone_kv(kv)
    lay = KVLayout(kv, NUM_BLOCKS, BLOCK, 2, staged=staged)
    ref_lay = KVLayout(ref, NUM_BLOCKS, BLOCK, 2)
    perm = torch.randperm(NUM_BLOCKS, generator=gen).tolist()
    tier = torch.randint(0, 256, (3 * lay.object_bytes,), dtype=torch.uint8, generator=gen)
    chunks = [(tier[i * lay.object_bytes:(i + 1) * lay.object_bytes], perm[2 * i:2 * i + 2],
               first) for i, first in enumerate((1, 0, 2))]
    lay.load_chunks(chunks)
    for obj, ids, first in chunks:
        reference_load(ref_lay, obj, ids, first)
    for n in kv:
        assert same_bytes(kv[n], ref[n]), n


@pytest.mark.parametrize("geometry", sorted(GEOMETRIES))
@pytest.mark.parametrize("staged", [False, True])
def test_a_saved_chunk_of_random_blocks_loads_back_bit_for_bit(geometry, staged):
    shape, permute, _ = GEOMETRIES[geometry]
    gen = torch.Generator().manual_seed(11)
    lay = KVLayout(random_kv(shape, torch.float16, gen, permute), NUM_BLOCKS, BLOCK, 4,
                   staged=staged)
    perm = torch.randperm(NUM_BLOCKS, generator=gen).tolist()
    src, dst = perm[:4], perm[4:8]
    before = {b: lay.block_bytes_of(b) for b in range(NUM_BLOCKS)}
    obj = torch.empty(lay.object_bytes, dtype=torch.uint8)
    lay.save(src, obj)
    lay.load(obj, dst)
    for s, d in zip(src, dst):
        assert lay.block_bytes_of(d) == before[s]
    for b in set(range(NUM_BLOCKS)) - set(dst):
        assert lay.block_bytes_of(b) == before[b], f"block {b} was touched"


def test_a_chunk_with_a_wrong_object_is_refused_before_anything_is_copied():
    kv = cpu_layout()
    lay = KVLayout(kv, NUM_BLOCKS, BLOCK, blocks_per_chunk=2)
    before = {b: lay.block_bytes_of(b) for b in range(NUM_BLOCKS)}
    good = torch.ones(lay.object_bytes, dtype=torch.uint8)
    with pytest.raises(ValueError):
        lay.load_chunks([(good, [0, 1], 0), (good[1:], [2, 3], 0)])
    with pytest.raises(ValueError):
        lay.load_chunks([(good, [0, 1], 0), (good, [2, NUM_BLOCKS], 0)])
    assert all(lay.block_bytes_of(b) == before[b] for b in range(NUM_BLOCKS))


def test_contiguous_layouts_copy_directly_and_others_per_block():
    assert "direct copies" in KVLayout(cpu_layout(), NUM_BLOCKS, BLOCK, 2).describe()
    assert "staged copies" in KVLayout(flash_layout(), NUM_BLOCKS, BLOCK, 2,
                                       staged=True).describe()
    hnd = {n: t.transpose(2, 3) for n, t in flash_layout().items()}
    assert "per-block copies" in KVLayout(hnd, NUM_BLOCKS, BLOCK, 2, staged=True).describe()


def test_a_load_of_several_chunks_is_one_torch_copy_call():
    # Each torch call that does work releases the GIL; beside a thread running Python, getting
    # it back can cost the 5 ms switch interval (docs/vllm.md, the GIL convoy).
    import sys
    lay = KVLayout(cpu_layout(), NUM_BLOCKS, BLOCK, blocks_per_chunk=2)
    tier = torch.zeros(4 * lay.object_bytes, dtype=torch.uint8)
    ids = [[0, 1], [5, 3], [7, 8], [11, 2]]
    chunks = [(tier[i * lay.object_bytes:(i + 1) * lay.object_bytes], ids[i], 0)
              for i in range(4)]
    calls = []

    def profile(frame, event, arg):
        if event == "c_call":
            calls.append(arg.__name__)

    sys.setprofile(profile)
    try:
        lay.load_chunks(chunks)
    finally:
        sys.setprofile(None)
    copies = [c for c in calls if "copy" in c or "index" in c or c in ("select", "view")]
    assert copies.count("_foreach_copy_") == 1
    assert copies.count("view") == len(chunks)  # one [blocks, block_bytes] view per object
    assert len(copies) == 1 + len(chunks), copies


def test_copy_bench_loads_objects_from_a_read_only_mapping_intact():
    from tempokv.vllm import copy_bench
    r = copy_bench.run(torch.device("cpu"), objects=2, repeat=1, register=False)
    assert r["last_block_equal"] and r["objects"] == 2 and r["seconds"] > 0


def test_copy_bench_beside_a_busy_python_thread_still_copies_intact():
    from tempokv.vllm import copy_bench
    r = copy_bench.run(torch.device("cpu"), objects=2, repeat=2, register=False, busy=True)
    assert r["busy"] and r["last_block_equal"] and r["median_gib_s"] > 0


def test_copy_bench_runs_with_torch_alone():
    # The lent GPU machine's image has torch but no pyzmq or msgpack (the client's needs):
    # scripts/gpu-restore-check runs the bench there from the package's files.
    import json
    import subprocess
    import sys
    code = ("import sys; sys.modules['zmq'] = sys.modules['msgpack'] = None; "
            "from tempokv.vllm import copy_bench; "
            "sys.exit(copy_bench.main(['--device', 'cpu', '--objects', '2', '--repeat', '1']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.splitlines()[-1])["last_block_equal"]
