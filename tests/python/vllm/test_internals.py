"""The private vLLM internals the connector's scheduler side reads (tempokv/vllm/internals.py,
scheduler.py, scheduler_side.py) exist in the installed vLLM with the shapes used, and the
version guard refuses a vLLM it was not tested with, naming the supported ones. A vLLM upgrade
that moves any of them fails here, not in a serving engine."""

import inspect

import pytest

pytest.importorskip("vllm")

import vllm  # noqa: E402
from vllm.v1.core.kv_cache_coordinator import KVCacheCoordinator  # noqa: E402
from vllm.v1.core.kv_cache_manager import KVCacheManager  # noqa: E402
from vllm.v1.core.sched.output import CachedRequestData, NewRequestData  # noqa: E402
from vllm.v1.core.sched.output import SchedulerOutput  # noqa: E402
from vllm.v1.core.sched.scheduler import Scheduler  # noqa: E402
from vllm.v1.request import Request  # noqa: E402

from tempokv.vllm import internals  # noqa: E402
from tempokv.vllm.internals import UnsupportedVLLM, check_version  # noqa: E402


def test_the_installed_vllm_is_a_supported_one():
    assert check_version() == vllm.__version__.split("+")[0]


def test_an_unknown_vllm_is_refused_naming_the_supported_releases(monkeypatch):
    monkeypatch.delenv(internals.OVERRIDE_ENV, raising=False)
    with pytest.raises(UnsupportedVLLM, match=r"vLLM 0\.31\.9 is not supported \(supported: "
                       + r"0\.32\.0\).*TEMPOKV_VLLM_UNSUPPORTED_OK=1"):
        check_version("0.31.9")
    assert check_version("0.32.0+cpu") == "0.32.0"
    monkeypatch.setenv(internals.OVERRIDE_ENV, "1")
    assert check_version("0.31.9") == "0.31.9"


def fields(cls):
    return set(getattr(cls, "__dataclass_fields__", {})) | set(
        inspect.signature(cls.__init__).parameters)


def test_the_scheduler_internals_read_exist():
    # internals.local_prefix_tokens
    assert "enable_caching" in inspect.signature(KVCacheManager.__init__).parameters
    params = list(inspect.signature(KVCacheCoordinator.find_longest_cache_hit).parameters)
    assert params == ["self", "block_hashes", "max_cache_hit_length"]
    # scheduler_side: the request's blocks, and what a step's output names
    assert list(inspect.signature(KVCacheManager.get_block_ids).parameters) == [
        "self", "request_id"]
    assert {"preempted_req_ids", "scheduled_new_reqs", "scheduled_cached_reqs",
            "num_scheduled_tokens", "total_num_scheduled_tokens",
            "finished_req_ids", "kv_connector_metadata"} <= fields(SchedulerOutput)
    assert {"req_id", "num_computed_tokens"} <= fields(NewRequestData)
    assert {"req_ids", "num_computed_tokens"} <= fields(CachedRequestData)
    # scheduler.py's snapshot and idle yield; scheduler_side's preemption and keys
    src = inspect.getsource(Scheduler.__init__)
    for attr in ("self.waiting", "self.running", "self.kv_holding_waiting",
                 "self.kv_cache_manager", "self.requests"):
        assert attr in src, attr
    req_src = inspect.getsource(Request)
    for attr in ("num_preemptions", "block_hashes", "num_prompt_tokens", "cache_salt",
                 "lora_request", "mm_features", "prompt_embeds", "num_computed_tokens"):
        assert attr in req_src, attr
    assert hasattr(Request, "num_output_tokens") and hasattr(Request, "num_tokens")
    # What the abort fix relies on: a request aborted while its KV loads is freed on its
    # finished_recving (finish_requests holds its blocks until then).
    assert "delay_free_blocks" in inspect.getsource(Scheduler.finish_requests)
