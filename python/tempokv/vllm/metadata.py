"""What the connector's scheduler side hands its worker side each step (pickled by vLLM).

Specs name chunks by their chain hash only: each worker keys them with its own rank's model id
(``identity.py``), so the same spec serves every tensor-parallel rank.
"""

from dataclasses import dataclass, field

from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorMetadata

__all__ = ["LoadSpec", "SaveSpec", "TempoKVMetadata"]


@dataclass
class LoadSpec:
    """Copy a claim's objects into a request's blocks (asynchronously, off the forward pass)."""
    req_id: str  # vLLM's id
    rid: int  # the u64 id of the request (and its claim) in tempokvd
    hashes: list  # chain hash of each chunk to load, in order
    block_ids: list  # the blocks of those chunks: len(hashes) * blocks_per_chunk
    first_block: int = 0  # blocks before this one are already computed: not overwritten
    ranks: int = 1  # objects per chunk in the claim's manifest, one per rank (Rank.index order)


@dataclass
class SaveSpec:
    """Store one full chunk, computed by the end of this step, from the request's blocks."""
    req_id: str
    chunk_hash: int  # the chunk's chain hash; the key's model id is the saving rank's
    first_token: int
    end_token: int
    block_ids: list  # blocks_per_chunk blocks


@dataclass
class TempoKVMetadata(KVConnectorMetadata):
    loads: list = field(default_factory=list)
    saves: list = field(default_factory=list)
    preempted: set = field(default_factory=set)  # vLLM ids preempted in this step
    # Finished while their load was outstanding: vLLM frees their blocks on the load's
    # finished_recving, so they are never reported in finished_sending.
    freed_by_load: set = field(default_factory=set)
