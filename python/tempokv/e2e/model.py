"""Builds a small Llama-architecture model with random weights and a local tokenizer.

No hub access: the weights come from a fixed seed (safetensors via transformers), the tokenizer
is a word-level vocabulary ``t0 .. t{V-1}`` built with ``tokenizers``. The geometry (``GEOMETRY``)
is chosen so that on a 2-core machine recomputing a 4K-token prefill costs far more than reading
its KV back from the SSD store, while staging one prompt's KV still takes ≥ 100 ms
(docs/vllm.md has the figures).

    python -m tempokv.e2e.model --out DIR [--force]
"""

import argparse
import json
import os
import sys

GEOMETRY = {
    "vocab_size": 4096,
    "hidden_size": 512,
    "intermediate_size": 1536,
    "num_hidden_layers": 6,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "head_dim": 128,  # in the CPU attention backend's supported set
    "max_position_embeddings": 16384,
}
SEED = 20261201
DTYPE = "float32"  # bit-exact KV comparisons need no rounding surprises; bf16 also works
VERSION = 1  # bump when the model or tokenizer changes, so cached copies are rebuilt


def kv_bytes_per_token(geometry=GEOMETRY, dtype_bytes=4):
    g = geometry
    return g["num_hidden_layers"] * g["num_key_value_heads"] * g["head_dim"] * 2 * dtype_bytes


def _stamp(out):
    return os.path.join(out, "tempokv-model.json")


def is_built(out):
    try:
        with open(_stamp(out)) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return False
    return meta.get("version") == VERSION and meta.get("geometry") == GEOMETRY


def build_tokenizer(out, vocab_size):
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders
    from transformers import PreTrainedTokenizerFast

    specials = ["<unk>", "<s>", "</s>"]
    vocab = {tok: i for i, tok in enumerate(specials)}
    for i in range(len(specials), vocab_size):
        vocab[f"t{i}"] = i
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>",
                                   eos_token="</s>")
    fast.save_pretrained(out)


def build(out, force=False):
    if is_built(out) and not force:
        return False
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    os.makedirs(out, exist_ok=True)
    torch.manual_seed(SEED)
    config = LlamaConfig(**GEOMETRY, rms_norm_eps=1e-5, rope_theta=10000.0, bos_token_id=1,
                         eos_token_id=2, tie_word_embeddings=False, torch_dtype=DTYPE)
    model = LlamaForCausalLM(config)
    # Wider weights than the default init so that logits are not flat: greedy decoding then
    # follows the model rather than ties.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.05)
    model.to(getattr(torch, DTYPE))
    model.save_pretrained(out, safe_serialization=True)
    build_tokenizer(out, GEOMETRY["vocab_size"])
    with open(_stamp(out), "w") as f:
        json.dump({"version": VERSION, "geometry": GEOMETRY, "seed": SEED, "dtype": DTYPE}, f)
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args(argv)
    built = build(args.out, args.force)
    print(f"{'built' if built else 'reusing'} {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
