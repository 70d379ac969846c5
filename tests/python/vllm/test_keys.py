"""Python's chunk keys are tempokv::Key's: the same tokens through both give the same keys."""

import os
import random
import subprocess

import pytest

xxhash = pytest.importorskip("xxhash")

from tempokv.keys import RequestIds, chain_hash, chunk_keys, model_id  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _key_vectors():
    path = os.environ.get("TEMPOKV_KEY_VECTORS") or os.path.join(
        REPO, "build", "debug", "tests", "python", "key_vectors")
    if not os.access(path, os.X_OK):
        pytest.skip(f"no key_vectors binary at {path} (ninja -C <build> key_vectors)")
    return path


def _cpp_keys(model, tokens, chunk):
    out = subprocess.run([_key_vectors(), model, str(chunk)], input=" ".join(map(str, tokens)),
                         capture_output=True, text=True, check=True).stdout.split()
    return int(out[0], 16), [(int(k[:16], 16), int(k[16:], 16)) for k in out[1:]]


@pytest.mark.parametrize("model,n,chunk,seed", [
    ("llama-3.1-8b", 1000, 256, 1),
    ("Qwen/Qwen2.5-14B|dev=cpu|tp=0/1", 4096 + 77, 256, 2),
    ("m", 7, 4, 3),
    ("m", 3, 4, 4),  # no whole chunk: no key
])
def test_python_keys_equal_cpp_keys(model, n, chunk, seed):
    r = random.Random(seed)
    tokens = [r.randrange(0, 2**32) for _ in range(n)]
    cpp_model, cpp_keys = _cpp_keys(model, tokens, chunk)
    assert model_id(model) == cpp_model
    assert chunk_keys(model, tokens, chunk) == cpp_keys
    assert len(cpp_keys) == n // chunk


def test_equal_prefixes_give_equal_keys_and_a_different_token_changes_the_rest():
    a = list(range(1200))
    b = a[:600] + [7] + a[601:]
    ka, kb = chunk_keys("m", a, 256), chunk_keys("m", b, 256)
    assert ka[:2] == kb[:2] and ka[2] != kb[2] and ka[3:] != kb[3:]


def test_chain_hash_rejects_tokens_outside_uint32():
    with pytest.raises(ValueError):
        chain_hash(0, [2**32])


def test_request_ids_are_unique_and_stable_until_released():
    ids = RequestIds()
    a, b = ids.get("req-a"), ids.get("req-b")
    assert a != b and ids.get("req-a") == a
    ids.release("req-a")
    assert ids.get("req-a") not in (a, b)
