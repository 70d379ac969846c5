"""The vLLM connector skeleton against a real tempokvd: save, match, load."""

import unittest

import tempokvd_fixture as fx

fx.require_daemon()

from tempokv.vllm_connector import (  # noqa: E402
    ConnectorConfig,
    Request,
    SchedulerStep,
    TempoKVSchedulerConnector,
    TempoKVWorkerConnector,
    chunk_hashes,
    model_id,
)

CHUNK = 16
LAYERS = ("layer.0", "layer.1", "layer.2")
LAYER_BYTES_PER_TOKEN = 1024  # so a chunk's payload is 3 * 16 KiB = 48 KiB


class KeysTest(unittest.TestCase):

    def test_chained_hashes(self):
        a = list(range(100))
        b = list(range(40)) + [7] * 60
        ha, hb = chunk_hashes(a, CHUNK), chunk_hashes(b, CHUNK)
        self.assertEqual(len(ha), 100 // CHUNK)  # full chunks only
        self.assertEqual(ha[:2], hb[:2])  # equal prefix, equal chunk hashes
        self.assertNotEqual(ha[2], hb[2])
        # Chained: the same tokens after a different prefix hash differently.
        c = [5] * 16 + list(range(16, 32))
        self.assertNotEqual(chunk_hashes(c, CHUNK)[1], ha[1])
        self.assertEqual(chunk_hashes(a[:15], CHUNK), [])
        self.assertNotEqual(model_id("m1"), model_id("m2"))
        self.assertLess(model_id("m1"), 1 << 64)


class ConnectorTest(fx.DaemonTestCase):

    def setUp(self):
        super().setUp()
        config = ConnectorConfig(model_name="test-model", chunk_tokens=CHUNK)
        # The scheduler and a worker rank: two sessions of one runtime.
        self.scheduler = TempoKVSchedulerConnector(
            self.client(name="scheduler", runtime="vllm-engine"), config)
        self.worker = TempoKVWorkerConnector(self.client(name="worker-0", runtime="vllm-engine"),
                                             config)
        self.stats_client = self.scheduler.client

    def layer_kv(self, request):
        """Each layer's KV of the request's prompt: a byte per token and layer, repeated."""
        out = {}
        for li, name in enumerate(LAYERS):
            out[name] = b"".join(bytes([(tok * 7 + li * 13) & 0xFF]) * LAYER_BYTES_PER_TOKEN
                                 for tok in request.prompt_token_ids)
        return out

    def expected_chunks(self, request, n_chunks):
        kv = self.layer_kv(request)
        out = b""
        for i in range(n_chunks):
            for name in LAYERS:
                out += kv[name][i * CHUNK * LAYER_BYTES_PER_TOKEN:
                                (i + 1) * CHUNK * LAYER_BYTES_PER_TOKEN]
        return out

    def run_step(self, request, output_tokens=4):
        """One request through the scheduler and the worker, as a vLLM step would drive them.
        Returns the matched token count."""
        matched, load_async = self.scheduler.get_num_new_matched_tokens(request, 0)
        self.assertFalse(load_async)
        self.scheduler.update_state_after_alloc(request, blocks=None,
                                                num_external_tokens=matched)
        meta = self.scheduler.build_connector_meta(
            SchedulerStep(waiting=[], scheduled_new=[request.request_id], decoding=[]))
        self.worker.bind_connector_metadata(meta)
        self.worker.start_load_kv()
        for name in LAYERS:
            self.worker.wait_for_layer_load(name)
            self.worker.save_kv_layer(name, {request.request_id: self.layer_kv(request)[name]})
        self.worker.wait_for_save()
        self.assertEqual(self.worker.get_finished(), (set(), set()))
        self.worker.clear_connector_metadata()
        self.scheduler.update_after_step(prefills_done=[request.request_id],
                                         tokens_generated={request.request_id: 1})
        self.assertEqual(self.scheduler.request_finished(request, output_tokens=output_tokens),
                         (False, None))
        return matched

    def test_saved_chunks_are_matched_and_loaded(self):
        first = Request(request_id=1, prompt_token_ids=list(range(1000, 1058)), max_tokens=8)
        self.assertEqual(self.run_step(first), 0)  # an empty store matches nothing
        self.assertEqual(self.worker.failed_saves, {})
        s = self.stats_client.stats()
        self.assertEqual(s["puts_total"], 58 // CHUNK)  # full chunks only
        self.assertEqual(s["put_bytes_total"],
                         (58 // CHUNK) * CHUNK * LAYER_BYTES_PER_TOKEN * len(LAYERS))

        # Same first 40 tokens (two full chunks and a half), then different ones.
        second = Request(request_id=2, prompt_token_ids=list(range(1000, 1040)) + [5] * 30,
                         max_tokens=8)
        self.assertEqual(self.run_step(second), 2 * CHUNK)
        self.assertEqual(self.worker.failed_loads, {})
        self.assertNotIn(1, self.worker.loaded_kv)
        self.assertEqual(bytes(self.worker.loaded_kv[2]), self.expected_chunks(first, 2))
        self.assertEqual(bytes(self.worker.loaded_kv[2]), self.expected_chunks(second, 2))
        s = self.stats_client.stats()
        self.assertEqual(s["claims_reported_total"], 1)
        self.assertEqual(s["tier_protected_bytes"], 0)
        self.assertEqual(sum(s[f"claims_{st}"] for st in ("planned", "staging", "stage_ready",
                                                            "transferring", "ordinary")), 0)
        # The second request saved its own new chunks (the third onwards).
        self.assertEqual(s["puts_total"], 58 // CHUNK + (70 // CHUNK - 2))

        # A prompt that is exactly the stored chunks: the last token is always left to compute.
        third = Request(request_id=3, prompt_token_ids=list(range(1000, 1000 + 3 * CHUNK)),
                        max_tokens=8)
        matched, _ = self.scheduler.get_num_new_matched_tokens(third, 0)
        self.assertEqual(matched, 2 * CHUNK)
        # With vLLM's own prefix cache holding the first chunk, only the second is loaded.
        matched, _ = self.scheduler.get_num_new_matched_tokens(third, CHUNK)
        self.assertEqual(matched, CHUNK)
        self.scheduler.update_state_after_alloc(third, num_external_tokens=matched)
        meta = self.scheduler.build_connector_meta(SchedulerStep(scheduled_new=[3]))
        self.assertEqual([len(load.chunks) for load in meta.loads], [1])
        self.worker.bind_connector_metadata(meta)
        self.worker.start_load_kv()
        self.assertEqual(bytes(self.worker.loaded_kv[3]),
                         self.expected_chunks(first, 2)[len(self.expected_chunks(first, 1)):])
        self.scheduler.request_finished(third)

    def test_waiting_requests_are_ordered(self):
        # Two requests queued; only the first is scheduled this step, the other keeps waiting.
        a = Request(request_id=10, prompt_token_ids=[1] * 40, max_tokens=4)
        b = Request(request_id=11, prompt_token_ids=[2] * 40, max_tokens=4)
        for r in (a, b):
            self.scheduler.get_num_new_matched_tokens(r, 0)
            self.scheduler.update_state_after_alloc(r, num_external_tokens=0)
        meta = self.scheduler.build_connector_meta(
            SchedulerStep(waiting=[11, 12345], scheduled_new=[10], decoding=[]))
        self.assertEqual([s.request_id for s in meta.saves], [10, 11])
        meta = self.scheduler.build_connector_meta(
            SchedulerStep(waiting=[], scheduled_new=[11], decoding=[10]))
        self.assertEqual(meta.saves, [])
        for r in (a, b):
            self.scheduler.request_finished(r, output_tokens=2)
        self.assertEqual(self.stats_client.stats()["request_errors_total"], 0)


if __name__ == "__main__":
    unittest.main()
