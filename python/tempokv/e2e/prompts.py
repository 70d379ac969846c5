"""The e2e prompts: groups of requests sharing a long prefix, drawn from a seed."""

import random

VOCAB_FIRST = 3  # ids 0..2 are the tokenizer's specials


def make_prompts(n, seed, vocab, prefix_tokens=3072, suffix_min=1024, suffix_max=1536,
                 group=4):
    """``n`` prompts of ``prefix_tokens + [suffix_min, suffix_max]`` tokens (≥ 4K by default);
    consecutive groups of ``group`` prompts share their prefix."""
    r = random.Random(seed)
    draw = lambda k: [r.randrange(VOCAB_FIRST, vocab) for _ in range(k)]  # noqa: E731
    prompts, prefix = [], None
    for i in range(n):
        if i % group == 0:
            prefix = draw(prefix_tokens)
        prompts.append(prefix + draw(r.randint(suffix_min, suffix_max)))
    return prompts
