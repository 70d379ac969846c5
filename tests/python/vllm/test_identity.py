"""Keys name everything a chunk's KV depends on (tempokv.vllm.identity): the model descriptor
(vLLM version, dtypes, attention backend, KV spec, tensor-parallel rank and pipeline stage) in
the model id, and the request's LoRA adapter, cache salt and multimodal items in the chain,
computed from vLLM's own config and Request objects."""

import dataclasses

import pytest

pytest.importorskip("vllm")
torch = pytest.importorskip("torch")

import vllm  # noqa: E402
from vllm import SamplingParams  # noqa: E402
from vllm.config import (CacheConfig, DeviceConfig, ModelConfig, ParallelConfig,  # noqa: E402
                         VllmConfig)
from vllm.lora.request import LoRARequest  # noqa: E402
from vllm.multimodal.inputs import MultiModalFeatureSpec, PlaceholderRange  # noqa: E402
from vllm.v1.kv_cache_interface import (FullAttentionSpec, KVCacheConfig,  # noqa: E402
                                        KVCacheGroupSpec)
from vllm.v1.request import Request  # noqa: E402

from tempokv.keys import chunk_keys  # noqa: E402
from tempokv.vllm.identity import (Rank, Unkeyable, model_descriptor, rank_model_ids,  # noqa
                                   ranks_of, request_extras, worker_rank)

CHUNK = 32


def configs(model_dir, tp=1, pp=1, dtype="float32", kv_dtype="auto", block=16, heads=1,
            head=64, spec_dtype=torch.float32):
    vc = VllmConfig(model_config=ModelConfig(model=model_dir, dtype=dtype, seed=0),
                    parallel_config=ParallelConfig(tensor_parallel_size=tp,
                                                   pipeline_parallel_size=pp),
                    cache_config=CacheConfig(block_size=block, cache_dtype=kv_dtype),
                    device_config=DeviceConfig("cpu"))
    kvc = KVCacheConfig(num_blocks=100, kv_cache_tensors=[], kv_cache_groups=[
        KVCacheGroupSpec(["layer.0"], FullAttentionSpec(block_size=block, num_kv_heads=heads,
                                                        head_size=head, dtype=spec_dtype))])
    return vc, kvc


def mid(vc, kvc, rank=Rank()):
    from tempokv.keys import model_id
    return model_id(model_descriptor(vc, kvc, "cpu", rank))


def test_every_tensor_parallel_rank_and_pipeline_stage_has_its_own_model_id(model_dir):
    vc, kvc = configs(model_dir, tp=2)
    ids = rank_model_ids(vc, kvc, "cpu")
    assert len(ids) == 2 and ids[0] != ids[1]
    assert ids == [mid(vc, kvc, r) for r in ranks_of(vc.parallel_config)]
    one, kvc1 = configs(model_dir, tp=1)
    assert rank_model_ids(one, kvc1, "cpu")[0] not in ids, "rank 0 of 2 is not rank 0 of 1"
    assert [r.index for r in ranks_of(configs(model_dir, tp=2, pp=2)[0].parallel_config)] == \
        [0, 1, 2, 3]
    pp = ranks_of(configs(model_dir, tp=2, pp=2)[0].parallel_config)
    assert len({mid(vc, kvc, r) for r in pp}) == 4


def test_a_single_rank_worker_is_rank_0_and_several_ranks_need_vllms_groups(model_dir):
    assert worker_rank(configs(model_dir)[0].parallel_config) == Rank()
    with pytest.raises(Exception):  # no process groups here: never a guessed rank 0
        worker_rank(configs(model_dir, tp=2)[0].parallel_config)


def test_the_model_id_changes_with_the_runtime_version_dtypes_backend_and_kv_spec(model_dir,
                                                                                monkeypatch):
    vc, kvc = configs(model_dir)
    base = mid(vc, kvc)
    assert mid(*configs(model_dir)) == base, "the same engine twice: the same id"
    assert mid(*configs(model_dir, dtype="bfloat16")) != base
    assert mid(*configs(model_dir, kv_dtype="fp8")) != base
    assert mid(*configs(model_dir, block=32)) != base
    assert mid(*configs(model_dir, heads=2)) != base
    assert mid(*configs(model_dir, head=128)) != base
    assert mid(*configs(model_dir, spec_dtype=torch.bfloat16)) != base
    vc2, kvc2 = configs(model_dir)
    vc2.attention_config = dataclasses.replace(vc2.attention_config, backend="CPU_ATTN")
    assert mid(vc2, kvc2) != base
    monkeypatch.setattr(vllm, "__version__", "0.33.0")  # a store that outlives an upgrade
    assert mid(vc, kvc) != base


def request(tokens, **kw):
    return Request(request_id="r", prompt_token_ids=tokens,
                   sampling_params=SamplingParams(max_tokens=1), pooling_params=None, **kw)


def hashes(req, tokens):
    return [h for _, h in chunk_keys(0, tokens, CHUNK, request_extras(req))]


TOKENS = list(range(100, 100 + 4 * CHUNK))


def test_a_request_without_extras_keeps_the_plain_token_chain():
    assert hashes(request(TOKENS), TOKENS) == [h for _, h in chunk_keys(0, TOKENS, CHUNK)]


def test_a_cache_salt_changes_every_chunk_and_equal_salts_share():
    plain = hashes(request(TOKENS), TOKENS)
    a = hashes(request(TOKENS, cache_salt="tenant-a"), TOKENS)
    b = hashes(request(TOKENS, cache_salt="tenant-b"), TOKENS)
    assert not set(a) & set(plain) and not set(a) & set(b)
    assert hashes(request(TOKENS, cache_salt="tenant-a"), TOKENS) == a


def test_a_lora_adapter_changes_every_chunk_by_name_and_by_path():
    plain = hashes(request(TOKENS), TOKENS)
    a = hashes(request(TOKENS, lora_request=LoRARequest("a", 1, "/adapters/a")), TOKENS)
    a2 = hashes(request(TOKENS, lora_request=LoRARequest("a", 1, "/adapters/a-v2")), TOKENS)
    b = hashes(request(TOKENS, lora_request=LoRARequest("b", 2, "/adapters/a")), TOKENS)
    assert len({tuple(plain), tuple(a), tuple(a2), tuple(b)}) == 4
    assert not set(a) & set(plain)


def image(ident, offset, length):
    return MultiModalFeatureSpec(data=None, modality="image", identifier=ident,
                                 mm_position=PlaceholderRange(offset=offset, length=length))


def test_a_multimodal_item_changes_the_chunks_from_the_first_it_covers():
    # Equal placeholder tokens, different images: chunk 0 (before the item) is shared, every
    # chunk from the item's first (chunk 1) on differs.
    x = hashes(request(TOKENS, mm_features=[image("img-x", CHUNK + 5, 40)]), TOKENS)
    y = hashes(request(TOKENS, mm_features=[image("img-y", CHUNK + 5, 40)]), TOKENS)
    plain = hashes(request(TOKENS), TOKENS)
    assert x[0] == y[0] == plain[0]
    assert all(a != b for a, b in zip(x[1:], y[1:]))
    assert all(a != b for a, b in zip(x[1:], plain[1:]))
    moved = hashes(request(TOKENS, mm_features=[image("img-x", CHUNK + 6, 40)]), TOKENS)
    assert moved[1:] != x[1:], "the same image at another position is another input"


def test_prompt_embeddings_are_not_keyed():
    req = request(TOKENS)
    req.prompt_embeds = torch.zeros(len(TOKENS), 8)
    with pytest.raises(Unkeyable):
        request_extras(req)


def connector(vc, kvc, role):
    from vllm.config import KVTransferConfig
    from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole
    from tempokv.vllm.connector import TempoKVConnector
    vc.kv_transfer_config = KVTransferConfig(
        kv_connector="TempoKVConnector", kv_connector_module_path="tempokv.vllm",
        kv_role="kv_both", kv_load_failure_policy="recompute",
        kv_connector_extra_config={"endpoint": "ipc:///nonexistent/tempokvd.sock",
                                   "chunk_tokens": 32})
    return TempoKVConnector(vc, getattr(KVConnectorRole, role), kvc)


@pytest.mark.parametrize("rank", [Rank(0, 2), Rank(1, 2)])
def test_each_workers_model_id_is_the_one_the_scheduler_asks_for_at_its_rank(model_dir, rank,
                                                                            monkeypatch):
    import tempokv.vllm.connector as conn_mod
    monkeypatch.setattr(conn_mod, "worker_rank", lambda pc: rank)  # vLLM's groups, stood in
    vc, kvc = configs(model_dir, tp=2)
    worker = connector(vc, kvc, "WORKER")
    vc2, kvc2 = configs(model_dir, tp=2)
    sched = connector(vc2, kvc2, "SCHEDULER")
    try:
        assert worker.rank == rank
        assert worker.model_id == sched.model_ids[rank.index]
        assert worker.model_id != sched.model_ids[1 - rank.index]
        assert sched.runtime_settings["ranks"] == 2, "a claim ends when both ranks copied"
    finally:
        sched.shutdown()
