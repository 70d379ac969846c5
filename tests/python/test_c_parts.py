"""scripts/c-parts: a request's cached bytes times each phase of its claim, per request."""
import importlib.machinery
import importlib.util
import os
import unittest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "c-parts")


def load():
    loader = importlib.machinery.SourceFileLoader("c_parts", SCRIPT)
    spec = importlib.util.spec_from_loader("c_parts", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def row(policy, gib, committed, ready, requested, start, end, ttft):
    b = str(int(gib * (1 << 30))) if gib else "0"
    return {"policy": policy, "cached_bytes": b, "committed_s": committed, "ready_s": ready,
            "retrieval_requested_s": requested, "admitted_s": requested,
            "retrieval_start_s": start, "retrieval_end_s": end, "ttft_s": ttft}


class CPartsTest(unittest.TestCase):
    def test_each_phase_is_bytes_times_its_time_per_request(self):
        c_parts = load()
        rows = [
            # 2 GiB committed 1 s before its request, ready 0.5 s before it, transfer 0.25 s.
            row("early", 2, "9", "9.5", "10", "10", "10.25", "1.0"),
            # 1 GiB committed at its request and ready 0.5 s later (late), moved at once.
            row("early", 1, "20", "20.5", "20", "20.5", "20.75", "3.0"),
            # No hit: counts as a request, holds nothing.
            row("early", 0, "", "", "", "", "", "2.0"),
        ]
        p = c_parts.parts(rows)["early"]
        self.assertEqual(p["requests"], 3)
        self.assertAlmostEqual(p["reading"], (2 * 0.5 + 1 * 0.5) / 3)
        self.assertAlmostEqual(p["waiting"], (2 * 0.5 + 0) / 3)
        self.assertAlmostEqual(p["transfer"], (2 * 0.25 + 1 * 0.25) / 3)
        self.assertAlmostEqual(p["before_request"], (2 * 1.0) / 3)
        self.assertEqual(p["late"], 1)
        self.assertAlmostEqual(p["mean_ttft_s"], 2.0)


if __name__ == "__main__":
    unittest.main()
