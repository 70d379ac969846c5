"""What the client tests share: a daemon per test (tempokvd_fixture), deterministic payloads, and
the put / claim / retrieve steps most tests begin with."""

import tempokvd_fixture as fx

MODEL = 0x5EED_0000_0000_0001
# The claim states of the `claims` gauge, as stats() names them (claims_<state>, lower case).
LIVE_CLAIM_STATES = ("planned", "staging", "stage_ready", "transferring", "ordinary")


def payload(i, nbytes):
    """Deterministic, distinct bytes for object i."""
    block = bytes((i * 31 + j) & 0xFF for j in range(251))
    return (block * (nbytes // len(block) + 1))[:nbytes]


def live_claims(stats):
    return sum(stats[f"claims_{s}"] for s in LIVE_CLAIM_STATES)


class ClientCase(fx.DaemonTestCase):

    def put_objects(self, c, sizes, first_hash=1):
        """Puts one object per size; returns [(key, payload)]."""
        out = []
        for i, n in enumerate(sizes):
            key = (MODEL, first_hash + i)
            data = payload(first_hash + i, n)
            c.put(key, i * 16, (i + 1) * 16, data)
            out.append((key, data))
        return out

    def claim(self, c, request_id, objs, prompt_tokens=64):
        """add_request + report_hit + update_order for a claim on objs."""
        c.add_request(request_id, prompt_tokens, 16 * len(objs), sum(len(d) for _, d in objs), 16)
        c.report_hit(request_id, [(k[0], k[1], len(d)) for k, d in objs])
        c.update_order([request_id])

    def retrieve(self, c, request_id):
        """request_retrieval; on wait, polls until the notification. Returns (answer, path)."""
        calls = []
        answer = c.request_retrieval(request_id,
                                     on_ready=lambda *args: calls.append(args))
        if answer == "wait":
            self.wait_for(f"ready notification of {request_id}", lambda: calls, poll=c)
            self.assertEqual(len(calls), 1)
            rid, path, error = calls[0]
            self.assertEqual(rid, request_id)
            self.assertIsNone(error)
            self.assertIn(path, ("staged", "ordinary"))
            return answer, path
        self.assertIn(answer, ("ready", "ordinary_ready"))
        self.assertEqual(calls, [])
        return answer, "staged" if answer == "ready" else "ordinary"

