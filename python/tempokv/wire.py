"""The wire's values, checked before they are sent: protocol versions, integer ranges, keys,
checksums, and the errors an error reply names (docs/protocol.md)."""

from . import errors
from .errors import FailedPrecondition, Internal, InvalidArgument

PROTOCOL_VERSION = 4  # the newest version this client speaks
MIN_PROTOCOL_VERSION = 1  # the oldest: it speaks 1..4 (step needs 2, puts 3, step edits 4)
STEP_EDITS_VERSION = 4  # a step may give its lists as edits of the last step's

U32_MAX = (1 << 32) - 1
U64_MAX = (1 << 64) - 1
I64_MAX = (1 << 63) - 1

def uint(name, value, limit):
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument("InvalidArgument", f"{name} must be an int, got {type(value).__name__}")
    if value < 0 or value > limit:
        raise InvalidArgument("InvalidArgument", f"{name} is {value}, outside 0..{limit}")
    return value


def u32(name, value):
    return uint(name, value, U32_MAX)


def checksum_pair(digest):
    """An XXH3-128 as an int (``xxhash.xxh3_128_intdigest``) to the wire's [low64, high64]."""
    digest = int(digest)
    if not 0 <= digest < 1 << 128:
        raise InvalidArgument("InvalidArgument", f"checksum {digest} is not a 128-bit value")
    return [digest & 0xFFFFFFFFFFFFFFFF, digest >> 64]


def xxh3_128(view):
    """The wire's [low64, high64] of the XXH3-128 of a bytes-like payload."""
    import xxhash  # only writers need it (PyPI xxhash; Debian python3-xxhash)
    return checksum_pair(xxhash.xxh3_128_intdigest(view))


def u64(name, value):
    return uint(name, value, U64_MAX)


def key_pair(name, key):
    try:
        model, hash_ = key
    except (TypeError, ValueError):
        raise InvalidArgument("InvalidArgument", f"{name} must be a (model, hash) pair") from None
    return [u64(name + ".model", model), u64(name + ".hash", hash_)]


def id_list(name, ids):
    return [u64(f"{name}[{i}]", x) for i, x in enumerate(ids)]


def step_list_edits(last, decoders, waiting):
    """The edits of ``last`` (the previous step's ``(decoders, waiting)``) that give these lists,
    as ``(decoders_gone, decoders_new, waiting_taken, waiting_new)``: the last decoders without
    the gone ones, then the new ones; the last order without its first ``waiting_taken``, then
    the new ones (docs/protocol.md, "step"). None when edits cannot say it or are no shorter."""
    last_decoders, last_waiting = last
    gone, kept = [], 0
    for x in last_decoders:
        if kept < len(decoders) and decoders[kept] == x:
            kept += 1
        else:
            gone.append(x)
    if gone:  # a gone id is removed wherever it stands: one listed twice cannot stay
        gone_set = set(gone)
        if any(x in gone_set for x in decoders[:kept]):
            return None
    taken = len(last_waiting)
    if waiting:
        try:
            taken = last_waiting.index(waiting[0])
        except ValueError:
            pass
    stays = len(last_waiting) - taken
    if stays > len(waiting) or last_waiting[taken:] != waiting[:stays]:
        return None
    new_decoders, new_waiting = decoders[kept:], waiting[stays:]
    if len(gone) + len(new_decoders) + len(new_waiting) >= len(decoders) + len(waiting):
        return None
    return gone, new_decoders, taken, new_waiting


def error_of(obj):
    """The TempoKVError of an error map ``{code, message}`` (tolerating a malformed one)."""
    if isinstance(obj, dict):
        return errors.error_from_code(obj.get("code", "Unknown"), obj.get("message", ""))
    return Internal("Internal", f"malformed error from tempokvd: {obj!r}")


def session_gone(error):
    """Whether an error reply says the daemon has no session for this client (docs/protocol.md,
    Errors for bad messages)."""
    return isinstance(error, FailedPrecondition) and "has not said hello" in error.message

