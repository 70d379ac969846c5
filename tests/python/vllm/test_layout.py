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
