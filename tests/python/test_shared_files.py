"""remove_shared_files (tempokv.e2e.daemon): what a SIGKILLed tempokvd left on /dev/shm is removed
path by path, and nothing the daemon does not name its own files is."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from tempokv.e2e.daemon import remove_shared_files  # noqa: E402

TIER = "tempokvd-0123456789abcdef-tier"
WRITES = "tempokvd-0123456789abcdef-writes"
KEYS = "tempokvd-0123456789abcdef-keys"
REGION = "rt-" + "ab" * 16


class RemoveSharedFiles(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="tempokv-shared-")
        self.shm = os.path.join(self.tmp.name, "shm")
        self.data = os.path.join(self.tmp.name, "data")
        os.mkdir(self.shm)
        os.mkdir(self.data)

    def tearDown(self):
        self.tmp.cleanup()

    def shm_path(self, name):
        return os.path.join(self.shm, name)

    def record(self, *paths):
        with open(os.path.join(self.data, "tempokvd.shared"), "w") as f:
            f.write("".join(p + "\n" for p in paths))

    def touch(self, path):
        with open(path, "wb") as f:
            f.write(b"x")

    def test_the_write_regions_directory_does_not_stop_the_files_after_it(self):
        os.mkdir(self.shm_path(WRITES))
        self.touch(os.path.join(self.shm_path(WRITES), REGION))
        self.touch(self.shm_path(TIER))
        self.touch(self.shm_path(KEYS))
        self.record(self.shm_path(WRITES), self.shm_path(TIER), self.shm_path(KEYS))
        self.assertEqual(remove_shared_files(self.data), [])
        self.assertEqual(os.listdir(self.shm), [])
        self.assertFalse(os.path.exists(os.path.join(self.data, "tempokvd.shared")))

    def test_a_path_that_cannot_be_removed_keeps_no_other(self):
        os.mkdir(self.shm_path(TIER))  # a directory under a file's name: not removed
        self.touch(self.shm_path(KEYS))
        self.record(self.shm_path(TIER), self.shm_path(KEYS))
        self.assertEqual(remove_shared_files(self.data), [self.shm_path(TIER)])
        self.assertEqual(os.listdir(self.shm), [TIER])

    def test_files_the_daemon_does_not_make_are_kept(self):
        victim = os.path.join(self.tmp.name, "victim")
        self.touch(victim)
        os.symlink(victim, self.shm_path(TIER))  # a link under the daemon's name
        stray = os.path.join(self.shm_path(WRITES), "notes.txt")
        os.mkdir(self.shm_path(WRITES))
        self.touch(stray)
        self.record(victim, self.shm_path(TIER), self.shm_path(WRITES))
        kept = remove_shared_files(self.data)
        self.assertIn(victim, kept)
        self.assertIn(self.shm_path(TIER), kept)
        self.assertIn(stray, kept)
        self.assertTrue(os.path.exists(victim))
        self.assertTrue(os.path.exists(stray))

    def test_no_record_is_not_an_error(self):
        self.assertEqual(remove_shared_files(self.data), [])


if __name__ == "__main__":
    unittest.main()
