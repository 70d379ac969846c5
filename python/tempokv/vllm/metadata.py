"""What the connector's scheduler side hands its worker side each step (pickled by vLLM)."""

from dataclasses import dataclass, field

from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorMetadata

__all__ = ["LoadSpec", "SaveSpec", "TempoKVMetadata"]


@dataclass
class LoadSpec:
    """Copy a claim's objects into a request's blocks (asynchronously, off the forward pass)."""
    req_id: str  # vLLM's id
    rid: int  # the u64 id of the request (and its claim) in tempokvd
    keys: list  # [(model, hash)] of the claim's objects, in manifest order
    block_ids: list  # the blocks of those objects: len(keys) * blocks_per_chunk
    first_block: int = 0  # blocks before this one are already computed: not overwritten


@dataclass
class SaveSpec:
    """Store one full chunk, computed by the end of this step, from the request's blocks."""
    req_id: str
    key: tuple  # (model, hash)
    first_token: int
    end_token: int
    block_ids: list  # blocks_per_chunk blocks


@dataclass
class TempoKVMetadata(KVConnectorMetadata):
    loads: list = field(default_factory=list)
    saves: list = field(default_factory=list)
    preempted: set = field(default_factory=set)  # vLLM ids preempted in this step
