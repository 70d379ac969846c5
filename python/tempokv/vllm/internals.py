"""What the connector reads of vLLM beyond its connector API, in one place.

The scheduler side reads private internals of vLLM's scheduler (its KV cache manager's prefix
cache lookup; the waiting queues ``TempoKVScheduler`` snapshots). They change between vLLM
releases, so the connector runs only on the versions it was tested with (``SUPPORTED``) and
refuses any other at construction, naming them; ``TEMPOKV_VLLM_UNSUPPORTED_OK=1`` overrides
that (at the user's risk). tests/python/vllm/test_internals.py pins every name read here.
"""

import os

__all__ = ["SUPPORTED", "check_version", "local_prefix_tokens"]

SUPPORTED = ("0.32.0",)  # vLLM releases the connector is tested with

OVERRIDE_ENV = "TEMPOKV_VLLM_UNSUPPORTED_OK"


class UnsupportedVLLM(RuntimeError):
    pass


def check_version(version=None):
    """Raises ``UnsupportedVLLM`` naming the supported releases unless ``version`` (vLLM's own,
    by default) is one of them or the override is set."""
    if version is None:
        import vllm
        version = vllm.__version__
    base = str(version).split("+", 1)[0]  # local builds: 0.32.0+cpu
    if base in SUPPORTED or os.environ.get(OVERRIDE_ENV) == "1":
        return base
    raise UnsupportedVLLM(
        f"tempokv: vLLM {version} is not supported (supported: {', '.join(SUPPORTED)}); the "
        f"connector reads private scheduler internals that change between releases. Install a "
        f"supported vLLM, or set {OVERRIDE_ENV}=1 to run anyway at your own risk")


def local_prefix_tokens(kv_cache_manager, request):
    """Tokens of ``request``'s prompt that vLLM's own prefix cache holds now (whole blocks; 0
    without prefix caching). A lookup only: nothing is allocated, touched or counted."""
    if kv_cache_manager is None or not getattr(kv_cache_manager, "enable_caching", False):
        return 0
    block_hashes = getattr(request, "block_hashes", None)
    if not block_hashes:
        return 0
    _, hit_tokens, *_ = kv_cache_manager.coordinator.find_longest_cache_hit(
        block_hashes, request.num_tokens - 1)
    return int(hit_tokens)
