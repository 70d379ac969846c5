"""The trust model from the Python client (docs/service.md, "Security model"): a runtime listed in
tempokvd's server.tokens_file is joined only with its token."""

import os
import tempfile
import unittest

import tempokvd_fixture as fx

fx.require_daemon()

from tempokv import FailedPrecondition  # noqa: E402

_TOKENS_DIR = tempfile.mkdtemp(prefix="tempokv-tokens-")
_TOKENS = os.path.join(_TOKENS_DIR, "tokens")
with open(_TOKENS, "w") as f:
    f.write("engine-a s3cret-a\n")
os.chmod(_TOKENS, 0o600)  # tempokvd refuses a tokens file anyone else may read


class TokenTest(fx.DaemonTestCase):
    extra_flags = ("--set", f"server.tokens_file={_TOKENS}")

    def test_a_listed_runtime_needs_its_token(self):
        with self.assertRaises(FailedPrecondition) as none:
            self.client(runtime="engine-a")
        self.assertIn("needs its token", none.exception.message)
        with self.assertRaises(FailedPrecondition):
            self.client(runtime="engine-a", token="wrong")
        a = self.client(runtime="engine-a", token="s3cret-a")
        rank = self.client(runtime="engine-a", token="s3cret-a")
        self.assertEqual(a.runtime_id, rank.runtime_id)
        a.heartbeat()

    def test_an_unlisted_runtime_needs_no_token(self):
        # Two sessions of an unlisted runtime join it without a token: one runtime.
        other = self.client(runtime="other")
        rank = self.client(runtime="other")
        self.assertEqual(other.runtime_id, rank.runtime_id)
        other.heartbeat()
        # A listed runtime and an unnamed session are runtimes of their own.
        a = self.client(runtime="engine-a", token="s3cret-a")
        anon = self.client()
        self.assertEqual(len({other.runtime_id, a.runtime_id, anon.runtime_id}), 3)
        anon.heartbeat()


if __name__ == "__main__":
    unittest.main()
