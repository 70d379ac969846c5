"""Fixtures shared by the vLLM connector tests: a real tempokvd per test (skipped, with the
reason, where no tempokvd binary is built)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tempokvd_fixture as fx  # noqa: E402


@pytest.fixture
def daemon():
    yield from fx.serve()
