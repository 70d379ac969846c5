"""Fixtures shared by the vLLM connector tests: a real tempokvd per test (skipped, with the
reason, where no tempokvd binary is built), and a model directory for vLLM's configs."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tempokvd_fixture as fx  # noqa: E402


@pytest.fixture
def daemon():
    yield from fx.serve()


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    """config.json and a tokenizer only: the scheduler never loads weights."""
    pytest.importorskip("transformers")
    from transformers import LlamaConfig
    from tempokv.e2e import model as model_mod
    d = str(tmp_path_factory.mktemp("model"))
    LlamaConfig(**dict(model_mod.GEOMETRY, num_hidden_layers=2)).save_pretrained(d)
    model_mod.build_tokenizer(d, model_mod.GEOMETRY["vocab_size"])
    return d
