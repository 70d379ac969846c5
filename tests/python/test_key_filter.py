"""tempokvd's filter of stored keys as a client reads it (tempokv.key_filter): named in the hello,
mapped read-only, a stored key present as soon as its put is answered, an unstored one absent,
and a filter whose daemon stopped (or that another instance serves) no longer usable."""

import os
import stat
import struct
import tempfile

import tempokvd_fixture as fx

fx.require_daemon()

from client_case import MODEL, ClientCase  # noqa: E402
from tempokv import InvalidArgument  # noqa: E402
from tempokv.key_filter import HEADER_BYTES, KeyFilter, filter_slot  # noqa: E402


class KeyFilterTest(ClientCase):

    def test_the_hello_names_a_filter_of_the_stored_keys(self):
        c = self.client(name="filter-test")
        path = c.hello["key_filter_path"]
        self.assertTrue(path.endswith("-keys"), path)
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        f = KeyFilter(path)
        self.assertTrue(f.usable(c.instance))
        self.assertFalse(f.usable(c.instance + 1))
        self.assertFalse(f.may_hold((MODEL, 1)))
        self.put_objects(c, [4096, 4096])
        # The daemon's counters, found by this client's hashes: the two agree.
        self.assertTrue(f.may_hold((MODEL, 1)))
        self.assertTrue(f.may_hold((MODEL, 2)))
        self.assertFalse(f.may_hold((MODEL, 3)))
        self.assertFalse(f.may_hold((MODEL + 1, 1)))
        c.close()
        self.daemon.stop()
        self.assertFalse(f.live(), "a daemon that stops clears live: the filter is not used")
        self.assertFalse(f.usable(f.instance))
        f.close()

    def test_a_file_that_is_not_a_key_filter_is_refused(self):
        with tempfile.NamedTemporaryFile() as t:
            header = struct.pack("<8sIIQQQQ", b"TKVKEYS1", 1, 64, 64, 1, 2, 3)
            t.write(header + bytes(16 + 64))  # live, reserved, keys; 64 counters
            t.flush()
            f = KeyFilter(t.name)  # well formed: 64 slots, all zero
            self.assertFalse(f.may_hold((1, 2)))
            self.assertEqual(f.slots, 64)
            f.close()
            for bad, what in ((b"TKVKEYS2", "magic"), (None, "slots")):
                t.seek(0)
                if bad:
                    t.write(bad)
                else:
                    t.write(struct.pack("<8sIIQ", b"TKVKEYS1", 1, 64, 100))
                t.flush()
                with self.assertRaisesRegex(InvalidArgument, what):
                    KeyFilter(t.name)
                t.seek(0)
                t.write(header)

    def test_slots_are_a_seeded_mix_of_both_halves_of_the_key(self):
        slots = 1 << 22
        a = filter_slot(MODEL, 1, 7, slots)
        self.assertEqual(a, filter_slot(MODEL, 1, 7, slots))
        self.assertNotEqual(a, filter_slot(MODEL, 1, 8, slots))
        self.assertNotEqual(a, filter_slot(MODEL, 2, 7, slots))
        self.assertNotEqual(a, filter_slot(MODEL + 1, 1, 7, slots))
        self.assertLess(a, slots)
        self.assertEqual(HEADER_BYTES, 64)
