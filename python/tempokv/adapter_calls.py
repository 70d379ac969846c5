"""TempoKVClient's scheduler calls: the runtime adapter's calls one by one (version 1) and
:meth:`step`, all of them in one message per iteration (version 2).

A part of :class:`tempokv.client.TempoKVClient`, not a class to use alone.
"""

import time

import msgpack

from .errors import FailedPrecondition, InvalidArgument, TempoKVError
from .wire import I64_MAX, STEP_EDITS_VERSION, id_list, step_list_edits, u32, u64, uint


def manifest_entries(manifest):
    """A manifest's [(model, hash, bytes), ...] as the wire's checked rows."""
    entries = []
    for i, entry in enumerate(manifest):
        try:
            model, hash_, nbytes = entry
        except (TypeError, ValueError):
            raise InvalidArgument(
                "InvalidArgument", f"manifest[{i}] must be (model, hash, bytes)") from None
        entries.append([u64(f"manifest[{i}].model", model),
                        u64(f"manifest[{i}].hash", hash_),
                        u64(f"manifest[{i}].bytes", nbytes)])
    return entries


class AdapterCalls:
    """The adapter's calls about requests and iterations."""

    def add_request(self, request_id, prompt_tokens, cached_tokens, cached_bytes,
                    max_output_tokens, manifest=None):
        """``manifest``: the request's hit, as :meth:`report_hit`'s, reported with it: one
        round trip from protocol version 4 (two before). A refused report takes the request
        back: it is added with its hit or not at all."""
        args = {
            "request_id": u64("request_id", request_id),
            "prompt_tokens": u32("prompt_tokens", prompt_tokens),
            "cached_tokens": u32("cached_tokens", cached_tokens),
            "cached_bytes": u64("cached_bytes", cached_bytes),
            "max_output_tokens": u32("max_output_tokens", max_output_tokens),
        }
        entries = manifest_entries(manifest) if manifest else None
        if entries and self._version >= STEP_EDITS_VERSION:
            args["manifest"] = entries
        self._call("add_request", args)
        if entries and "manifest" not in args:
            try:
                self._call("report_hit", {"request_id": args["request_id"], "manifest": entries})
            except TempoKVError:
                self.finished(request_id, 0)  # as the daemon of version 4 does
                raise

    def report_hit(self, request_id, manifest):
        """``manifest``: [(model, hash, bytes), ...] in retrieval order."""
        self._call("report_hit", {"request_id": u64("request_id", request_id),
                                  "manifest": manifest_entries(manifest)})

    def update_order(self, waiting, boundary_in_ns=0):
        """``waiting``: request ids, first to be scheduled first; ``boundary_in_ns``: time until
        the running iteration ends (negative means 0, as for the adapter)."""
        boundary = max(0, int(boundary_in_ns))
        self._call("update_order", {"waiting": id_list("waiting", waiting),
                                    "boundary_in_ns": uint("boundary_in_ns", boundary, I64_MAX)})

    def iteration_started(self, prefills, decoders):
        self._call("iteration_started", {"prefills": id_list("prefills", prefills),
                                         "decoders": id_list("decoders", decoders)})

    def admitted(self, request_id):
        self._call("admitted", {"request_id": u64("request_id", request_id)})

    def prefill_done(self, request_id):
        self._call("prefill_done", {"request_id": u64("request_id", request_id)})

    def tokens_generated(self, request_id, total_generated):
        self._call("tokens_generated", {"request_id": u64("request_id", request_id),
                                        "total_generated": u32("total_generated",
                                                                total_generated)})

    def finished(self, request_id, output_tokens):
        self._call("finished", {"request_id": u64("request_id", request_id),
                                "output_tokens": u32("output_tokens", output_tokens)})

    def step(self, prefills=(), decoders=(), finished=(), queued=(), waiting=(),
             boundary_in_ns=0, admitted=(), measured=None):
        """Protocol v2: one message per scheduler iteration, in place of add_request, admitted,
        iteration_started, prefill_done, tokens_generated, finished and update_order
        (docs/protocol.md, "step"). Sent without waiting for the daemon; an error it is answered
        with is counted in ``late_errors`` (``last_late_error``) when a later call or poll reads
        it.

        ``prefills``: [(request_id, tokens)] prefilling in the iteration starting now (a chunk
        of a chunked prefill lists the request again); ``decoders``: request ids decoding one
        token in it; ``finished``: [(request_id, output_tokens)] ended since the last step;
        ``queued``: [(request_id, prompt_tokens, cached_tokens, cached_bytes,
        max_output_tokens)] that joined the waiting queue; ``waiting``: the waiting order after
        this schedule; ``boundary_in_ns``: time until the iteration starting now ends;
        ``admitted``: request ids scheduled without computing in this iteration (their KV
        loads); ``measured``: [(seq, duration_ns)], the runtime's measured durations of the
        iterations earlier steps started (by the ``seq`` :meth:`step` returned), or None when
        the runtime does not measure them (the daemon then times the steps' arrivals).
        Returns this step's ``seq``. From protocol version 4 the lists go as edits of the last
        step's where that is shorter (``step_edits`` of the client), in full again after a late
        error or a recovery.
        """
        if self._version < 2:
            raise FailedPrecondition("FailedPrecondition",
                                     f"step: tempokvd at {self.endpoint} speaks protocol version "
                                     f"{self._version}; step needs 2")

        def rows(name, values, width):
            out = []
            for i, row in enumerate(values):
                try:
                    row = list(row)
                except TypeError:
                    row = None
                if row is None or len(row) != width:
                    raise InvalidArgument("InvalidArgument",
                                          f"step: {name}[{i}] must have {width} integers")
                out.append([u64(f"{name}[{i}][0]", row[0])] +
                           [(u64 if (name == "queued" and j == 3) else u32)(
                               f"{name}[{i}][{j}]", row[j]) for j in range(1, width)])
            return out

        args = {
            "seq": self._step_seq + 1,
            "queued": rows("queued", queued, 5),
            "finished": rows("finished", finished, 2),
            "prefills": rows("prefills", prefills, 2),
            "boundary_in_ns": uint("boundary_in_ns", max(0, int(boundary_in_ns)), I64_MAX),
            "admitted": id_list("admitted", admitted),
        }
        if measured is not None:
            args["measured"] = [[u64(f"measured[{i}][0]", m[0]),
                                 uint(f"measured[{i}][1]", max(0, int(m[1])), I64_MAX)]
                                for i, m in enumerate(measured)]
        self._check_open("step")
        if self.reconnect and self._session_lost:
            self._recover()
        # The lists as edits of the last step's (version 4) while no late error or recovery came
        # since it was sent: the daemon then holds the same lists.
        decoders, waiting = list(decoders), list(waiting)
        use_edits = self.step_edits and self._version >= STEP_EDITS_VERSION
        if use_edits and self._step_lists is not None:
            with self._lock:
                self._drain_locked(0)  # a late error already here: the daemon may hold no lists
        marks = (self.late_errors, self.recoveries)
        edits = None
        if use_edits and self._step_lists is not None and self._step_lists[0] == marks:
            edits = step_list_edits(self._step_lists[2], decoders, waiting)
        if edits is None:
            args["decoders"] = id_list("decoders", decoders)
            args["waiting"] = id_list("waiting", waiting)
        else:
            args["base"] = self._step_lists[1]
            args["decoders_gone"] = edits[0]
            args["decoders_new"] = id_list("decoders", edits[1])
            args["waiting_taken"] = edits[2]
            args["waiting_new"] = id_list("waiting", edits[3])
        self._step_lists = None
        with self._lock:
            request_id = self._next_id
            self._next_id += 1
            message = msgpack.packb({"v": self._version, "id": request_id, "op": "step",
                                     "args": args}, use_bin_type=True)
            self._send("step", message, 0)
            self._last_sent = time.monotonic()
            self._step_seq += 1
            if use_edits and self.recoveries == marks[1]:
                self._step_lists = (marks, self._step_seq, (decoders, waiting))
            return self._step_seq
