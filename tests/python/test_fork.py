"""TempoKVClient across fork(): a child gets its own socket, session and heartbeat; the parent's
session is untouched (vLLM forks its workers)."""

import json
import os
import threading
import time
import unittest

import tempokvd_fixture as fx

fx.require_daemon()

from tempokv import TempoKVClient  # noqa: E402

MODEL = 0x5EED_0000_0000_00F0


def run_in_child(fn, timeout_s=30, forked=lambda: None):
    """Forks; the child runs fn() and sends back its JSON result. Returns it (or fails).
    The parent calls ``forked()`` once the child exists."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 0
        try:
            out = fn()
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            out, code = {"error": repr(e)}, 1
        os.write(w, json.dumps(out).encode())
        os.close(w)
        os._exit(code)
    os.close(w)
    forked()
    deadline = time.monotonic() + timeout_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            raise AssertionError(f"the forked child did not finish within {timeout_s} s")
        time.sleep(0.05)
    with os.fdopen(r, "rb") as f:
        result = json.loads(f.read() or b"{}")
    if os.waitstatus_to_exitcode(status) != 0:
        raise AssertionError(f"child failed: {result}")
    return result


class ForkTest(fx.DaemonTestCase):

    def test_a_forked_child_says_hello_as_a_new_session_and_keeps_it_alive(self):
        c = TempoKVClient(self.daemon.endpoint, name="parent", runtime="engine")
        self.addCleanup(c.close)
        key = (MODEL, 1)
        c.put(key, 0, 16, b"x" * 8192)
        parent_session = c.session
        opened = c.stats()["sessions_opened_total"]
        # A thread of the parent holds the client's lock while the process forks: in the child
        # that lock would never be released.
        held, release = threading.Event(), threading.Event()

        def hold():
            with c._lock:
                held.set()
                release.wait()
        t = threading.Thread(target=hold)
        t.start()
        held.wait()

        def child():
            sizes = c.lookup([key])  # the first call notices the fork
            out = {"session": c.session, "forks": c.forks, "sizes": sizes,
                   "runtime_id": c.runtime_id,
                   "heartbeat": c._heartbeat_thread is not None and
                   c._heartbeat_thread.is_alive()}
            # Longer than the daemon's heartbeat timeout without a call of our own.
            time.sleep(fx.HEARTBEAT_TIMEOUT_S * 1.5)
            out["recoveries"] = c.recoveries
            out["sizes_after"] = c.lookup([key])
            c.close()
            return out
        try:
            got = run_in_child(child, forked=release.set)
        finally:
            release.set()
            t.join()
        self.assertEqual(got["forks"], 1)
        self.assertNotEqual(got["session"], parent_session)
        self.assertEqual(got["runtime_id"], c.runtime_id, "the same named runtime")
        self.assertEqual(got["sizes"], [8192])
        self.assertTrue(got["heartbeat"])
        self.assertEqual(got["recoveries"], 0, "the child's heartbeat kept its session")
        self.assertEqual(got["sizes_after"], [8192])
        # The parent's session went on untouched, through the same socket.
        self.assertEqual(c.session, parent_session)
        self.assertEqual(c.lookup([key]), [8192])
        self.assertEqual(c.forks, 0)
        self.assertEqual(c.recoveries, 0)
        self.assertEqual(c.stats()["sessions_opened_total"], opened + 1)

    def test_closing_an_unused_client_in_a_child_leaves_the_parents_session_alone(self):
        c = TempoKVClient(self.daemon.endpoint, name="parent")
        self.addCleanup(c.close)
        run_in_child(lambda: (c.close(), {"closed": c.closed})[1])
        c.heartbeat()
        self.assertEqual(c.stats()["sessions_closed_total"], 0)
        self.assertEqual(c.recoveries, 0)


if __name__ == "__main__":
    unittest.main()
