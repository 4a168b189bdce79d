"""Reference implementation of Cairn's canonical JSON and hashes (standard library only).

The rules are in docs/canonical-json.md; canonical/testdata/vectors.json holds
the test vectors (run test_vectors.py). What plain json.dumps(sort_keys=True,
separators=(",", ":"), ensure_ascii=False) gets wrong, and this module gets right:

* control characters are escaped with UPPERCASE hex (\\u001B, not \\u001b);
* floats use Erlang's "short" format (1.0e-7, 1.0e21, 100.0, 1.0e3), not repr;
* integers and floats stay distinct (1 and 1.0 are different values);
* input is decoded strictly: duplicate keys, lone surrogates, NaN/Infinity, floats
  that overflow binary64, invalid UTF-8 and nesting deeper than 32 are rejected.

Values are the usual Python JSON values: None, bool, int, float, str, list (or tuple)
and dict with str keys.
"""

import hashlib
import json
import math

__all__ = [
    "MAX_DEPTH", "CanonicalError", "DuplicateKeyError", "loads", "encode", "hash_value",
    "hash_bytes", "canonicalize", "content_payload", "content_hash", "provenance_sha256",
    "with_hashes", "checkpoint_hash",
]

# The root is depth 0 and each array element or object member value is one level
# deeper; a value deeper than MAX_DEPTH is not canonical.
MAX_DEPTH = 32


class CanonicalError(ValueError):
    """The value or JSON text is outside canonical JSON (vectors: invalid_json)."""


class DuplicateKeyError(CanonicalError):
    """An object names the same key twice after unescaping (vectors: duplicate_key)."""


# ---------------------------------------------------------------------------
# Decoding: strict JSON text to Python values


def _reject_constant(name):
    raise CanonicalError("%s is not JSON" % name)


def _parse_float(text):
    f = float(text)
    if math.isinf(f):
        raise CanonicalError("number %s does not fit a binary64 float" % text[:40])
    return f  # underflow rounds to 0.0 or -0.0, as in Go


def _object(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise DuplicateKeyError("key %r appears twice" % key[:40])
        obj[key] = value
    return obj


_decoder = json.JSONDecoder(object_pairs_hook=_object, parse_float=_parse_float,
                            parse_constant=_reject_constant, strict=True)


def loads(data):
    """Decode JSON text (bytes as UTF-8, or str) strictly into canonical values.

    Raises DuplicateKeyError for a repeated key, CanonicalError for anything else that
    is not canonical JSON.
    """
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            data = bytes(data).decode("utf-8")  # strict: invalid UTF-8 and surrogates fail
        except UnicodeDecodeError as e:
            raise CanonicalError("input is not valid UTF-8: %s" % e) from None
    try:
        value = _decoder.decode(data)
    except RecursionError:
        raise CanonicalError("nesting deeper than %d levels" % MAX_DEPTH) from None
    except CanonicalError:
        raise
    except ValueError as e:  # json.JSONDecodeError, or int() beyond Python's digit limit
        raise CanonicalError(str(e)) from None
    _check_domain(value, 0)
    return value


def _check_domain(value, depth):
    """Rejects what json.loads lets through: deep nesting and unpaired surrogates."""
    if depth > MAX_DEPTH:
        raise CanonicalError("nesting deeper than %d levels" % MAX_DEPTH)
    if isinstance(value, str):
        _utf8(value)
    elif isinstance(value, list):
        for item in value:
            _check_domain(item, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            _utf8(key)
            _check_domain(item, depth + 1)


def _utf8(s):
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError:
        raise CanonicalError("string has an unpaired surrogate") from None


# ---------------------------------------------------------------------------
# Encoding: Python values to canonical bytes

_ESCAPES = {i: "\\u%04X" % i for i in range(0x20)}  # uppercase hex
_ESCAPES.update({0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r",
                 0x22: '\\"', 0x5C: "\\\\"})


def _string(s):
    _utf8(s)
    return '"' + s.translate(_ESCAPES) + '"'


def _shortest_digits(f):
    """The shortest digits that read back as f (f > 0) and the decimal exponent of
    the first digit: 1234.5 -> ("12345", 3). repr gives the shortest round trip."""
    mantissa, _, exp = repr(f).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    exponent = len(whole) - 1 + (int(exp) if exp else 0)
    stripped = digits.lstrip("0")
    exponent -= len(digits) - len(stripped)
    return stripped.rstrip("0") or "0", exponent


def format_float(f):
    """Erlang float_to_binary(f, [short]): the shortest round-tripping digits, as a
    plain decimal when that is no longer than scientific notation, always with a
    fraction or an exponent."""
    if math.isnan(f) or math.isinf(f):
        raise CanonicalError("float %r has no JSON form" % f)
    if f == 0:
        return "-0.0" if math.copysign(1.0, f) < 0 else "0.0"
    sign = "-" if f < 0 else ""
    f = abs(f)
    digits, exp = _shortest_digits(f)
    length = len(digits)
    p = exp - length + 1  # f = digits * 10**p
    cost = len(str(exp)) + 2
    if p < 0:
        if exp >= 0:
            return sign + digits[:length + p] + "." + digits[length + p:]
        if 2 - p - length <= cost:
            return sign + "0." + "0" * (-p - length) + digits
    elif cost + (1 if length == 1 else 0) >= p + 2 and f < 2.0 ** 53:
        return sign + digits + "0" * p + ".0"
    return sign + digits[0] + "." + (digits[1:] or "0") + "e" + str(exp)


def _encode(value, depth, out):
    if depth > MAX_DEPTH:
        raise CanonicalError("nesting deeper than %d levels" % MAX_DEPTH)
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(int(value)))
    elif isinstance(value, float):
        out.append(format_float(value))
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _encode(item, depth + 1, out)
        out.append("]")
    elif isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise CanonicalError("object key %r is not a string" % (key,))
        out.append("{")
        # Members sort by the UTF-8 bytes of their keys. For valid text that is
        # code point order, which is how Python compares str.
        for i, key in enumerate(sorted(value)):
            if i:
                out.append(",")
            out.append(_string(key))
            out.append(":")
            _encode(value[key], depth + 1, out)
        out.append("}")
    else:
        raise CanonicalError("unsupported type %s" % type(value).__name__)


def encode(value):
    """The canonical encoding of value, as UTF-8 bytes."""
    out = []
    _encode(value, 0, out)
    return "".join(out).encode("utf-8")


def hash_bytes(data):
    """Lowercase hex SHA-256 of data."""
    return hashlib.sha256(data).hexdigest()


def hash_value(value):
    """Lowercase hex SHA-256 of the canonical encoding of value."""
    return hash_bytes(encode(value))


def canonicalize(data):
    """The canonical encoding of JSON text (bytes or str): loads, then encode."""
    return encode(loads(data))


# ---------------------------------------------------------------------------
# The hashes of the request contract (subjects.md, docs/canonical-json.md)


def content_payload(event):
    """The object content_hash covers, with the defaults of fields left out."""
    ids = event.get("artifact_ids")
    truncated = event.get("truncated")
    return {
        "artifact_ids": [] if ids is None else list(ids),
        "content": event.get("content"),
        "tool": event.get("tool"),
        "truncated": False if truncated is None else truncated,
    }


def content_hash(event):
    """content_hash of an event: the hash of {artifact_ids, content, tool, truncated}."""
    return hash_value(content_payload(event))


def provenance_sha256(event):
    """provenance_sha256 of an event: the hash of its provenance."""
    return hash_value(event.get("provenance"))


def with_hashes(event):
    """A copy of event with content_hash and provenance_sha256 filled in."""
    out = dict(event)
    out["content_hash"] = content_hash(event)
    out["provenance_sha256"] = provenance_sha256(event)
    return out


def checkpoint_hash(checkpoint):
    """checkpoint_hash: the hash of a checkpoint persistence map without created_at."""
    return hash_value({k: v for k, v in checkpoint.items() if k != "created_at"})
