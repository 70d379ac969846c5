"""A ready claim's object spans, as tempokvd sends them, checked before anyone reads one.

``objects`` is ``[[offset, bytes], ...]`` into the fast tier mapping; a daemon that numbers its
copies (DESIGN.md §9) also sends ``generations``, a parallel list, carried here as
``Span.generation`` (None when absent), never required. A span that is empty or does not lie
inside the tier (an offset of 2^64-1, a length past the end) is an error of the claim, never
a read.
"""

from .errors import Internal

__all__ = ["Span", "parse_spans"]


class Span(tuple):
    """``(offset, bytes)``, with the daemon's ``generation`` (None when it sent none)."""

    def __new__(cls, offset, nbytes, generation=None):
        span = super().__new__(cls, (offset, nbytes))
        span.generation = generation
        return span

    @property
    def offset(self):
        return self[0]

    @property
    def bytes(self):
        return self[1]


def _uint(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def parse_spans(objects, tier_bytes=None, generations=None):
    """The ``objects`` field (with the ``generations`` field, if sent) as a list of ``Span``,
    or None when absent. Raises Internal for a malformed span or, when ``tier_bytes`` is known,
    one outside ``[0, tier_bytes)``."""
    if objects is None:
        return None
    if not isinstance(objects, (list, tuple)):
        raise Internal("Internal", f"malformed object spans from tempokvd: {objects!r}")
    if generations is not None and (not isinstance(generations, (list, tuple))
                                    or len(generations) != len(objects)
                                    or not all(_uint(g) for g in generations)):
        raise Internal("Internal", f"generations {generations!r} do not match "
                                   f"{len(objects)} objects")
    out = []
    for i, entry in enumerate(objects):
        if (not isinstance(entry, (list, tuple)) or len(entry) != 2
                or not (_uint(entry[0]) and _uint(entry[1]))):
            raise Internal("Internal", f"malformed object span from tempokvd: {entry!r}")
        offset, nbytes = entry
        if nbytes == 0 or (tier_bytes is not None and offset + nbytes > tier_bytes):
            # No object is empty (the C++ client refuses these spans too).
            raise Internal("Internal", f"object {i}'s span [{offset}, +{nbytes}) is empty or "
                                       f"outside the tier of {tier_bytes} bytes")
        out.append(Span(offset, nbytes, None if generations is None else generations[i]))
    return out
