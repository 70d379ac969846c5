"""The e2e check's second KV oracle: blocks as vLLM's own block table has them.

The first oracle compares digests our saver and our loader took (``digests.py``): if both read
the wrong blocks the same way, it holds. This one does not go through the connector: while pass
1 runs (every prompt computed by vLLM itself), ``ReferenceKV`` asks each worker after every step
(``collective_rpc``: in this process, or in the engine's and workers' own) for the digests of
the blocks its *model runner's* block table lists for each request's restorable prefix, read
from the runner's KV tensors in the connector's digest format (``digests.block_digest``,
layers in model order), once those blocks are computed and while the request still holds them.
``compare`` then holds every block pass 2 loaded against the block vLLM computed for that chunk
in the request that saved it.

Why pass 1 and not a separate vLLM run: vLLM's CPU attention splits its work by the shape of
the step, so the same prompt computed in other prefill chunks gives KV that differs in the last
bits (measured: a prefix warmed alone, 2048 + 1024 tokens, against the same prompt prefilled
2048 + 2048: block 23 differs in layers 1-5, layer 0 and every other block are identical), and
pass 1's chunks depend on when each lookup was answered. A bit-exact comparison needs the very
computation whose bytes were saved.
"""

from ..vllm.digests import read_records, runner_block_digests

__all__ = ["ReferenceKV", "worker_prefix_digests", "compare", "external_id"]


def external_id(req_id):
    """The id a request was added with: vLLM's engine appends ``-<8 hex>`` to it."""
    return req_id.rsplit("-", 1)[0]


def worker_prefix_digests(worker, prefix_tokens):
    """On a worker: (its rank index, {req_id: digests of the blocks of its first
    ``prefix_tokens[req_id]`` tokens}) for the requests its runner holds, computed that far
    (ids as the requests were added)."""
    from ..vllm.identity import worker_rank
    runner = worker.model_runner
    block_size = worker.vllm_config.cache_config.block_size
    out = {}
    for internal, state in list(runner.requests.items()):
        req_id = external_id(internal)
        n = prefix_tokens.get(req_id, 0) // block_size
        if n == 0 or state.num_computed_tokens < n * block_size:
            continue
        blocks = list(state.block_ids[0][:n])
        out[req_id] = runner_block_digests(runner.kv_caches, runner.kv_cache_config.num_blocks,
                                           blocks)
    return worker_rank(worker.vllm_config.parallel_config).index, out


class ReferenceKV:
    """Digests of each request's first ``prefix_tokens[req]`` tokens' blocks, by rank."""

    def __init__(self, llm, prefix_tokens):
        self.llm = llm
        self.left = {r: n for r, n in prefix_tokens.items() if n > 0}
        self.digests = {}  # (req_id, rank index) -> [digest per block]

    def after_step(self):
        if not self.left:
            return
        for rank, got in self.llm.collective_rpc(worker_prefix_digests, args=(self.left,)):
            for req_id, digests in got.items():
                self.digests[(req_id, rank)] = digests
        done = {req_id for req_id, _ in self.digests}
        self.left = {r: n for r, n in self.left.items() if r not in done}


def compare(saved_file, loaded_file, reference, blocks_per_chunk):
    """(blocks compared, blocks differing) between the blocks a run loaded (its digest file)
    and ``reference`` digests of the same chunk's blocks in the request that saved it (pass
    1's digest file names it); a loaded block with no reference counts as differing."""
    saver = {(r["key"], r["block"]): (external_id(r["req"]), r["chunk"])
             for r in read_records(saved_file, "save")}
    compared = differing = 0
    for r in read_records(loaded_file, "load"):
        compared += 1
        src = saver.get((r["key"], r["block"]))
        ref = reference.get((src[0], r["rank"])) if src else None
        k = src[1] * blocks_per_chunk + r["block"] if src else 0
        if ref is None or k >= len(ref) or ref[k] != r["xxh3"]:
            differing += 1
    return compared, differing
