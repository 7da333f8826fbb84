"""Bodies as a client may send them: a serialised ExportTraceServiceRequest re-encoded in the
ways the protobuf wire format allows and `SerializeToString` never writes, so that the compiled
walk, which reads a body as received, is held to what the parser makes of the same bytes.

`variant(data, rng)` rewrites a trace request, message by message (the schema below names the
message fields extraction reads), each change drawn at random:

- unknown fields (every wire type, groups too) between the known ones;
- a singular message field (resource, scope, status, a KeyValue's value, an AnyValue's array
  or kvlist) split into two occurrences, which the parser merges;
- a singular field sent first with another value (the last wins; for the AnyValue oneof,
  another member first, which the later one replaces);
- a known field sent with another wire type (to the parser, an unknown field).

What the parser makes of the variant may differ from the original (a split AnyValue is merged,
a decoy member replaced); the tests compare both walks over the variant, never the variant with
the original.
"""

from __future__ import annotations

import random

# message name -> {field number: message name} for the length-delimited fields holding
# messages (all other fields are copied as they are)
SCHEMA: dict[str, dict[int, str]] = {
    "request": {1: "resource_spans"},
    "resource_spans": {1: "resource", 2: "scope_spans"},
    "resource": {1: "key_value"},
    "scope_spans": {1: "scope", 2: "span"},
    "scope": {3: "key_value"},
    "span": {9: "key_value", 11: "event", 15: "status"},
    "event": {3: "key_value"},
    "status": {},
    "key_value": {2: "any_value"},
    "any_value": {5: "array_value", 6: "kvlist_value"},
    "array_value": {1: "any_value"},
    "kvlist_value": {1: "key_value"},
}
# singular message fields: sent twice, the parser merges the two
SINGULAR = {("resource_spans", 1), ("scope_spans", 1), ("span", 15), ("key_value", 2),
            ("any_value", 5), ("any_value", 6)}
# singular fields whose earlier occurrence the last replaces: (message, field) -> wire type
LAST_WINS = {("span", 1): 2, ("span", 2): 2, ("span", 4): 2, ("span", 5): 2, ("span", 7): 1,
             ("span", 8): 1, ("event", 1): 1, ("event", 2): 2, ("status", 2): 2,
             ("status", 3): 0, ("key_value", 1): 2, ("scope", 1): 2}
ANY_MEMBERS = {1: 2, 2: 0, 3: 0, 4: 1, 5: 2, 6: 2, 7: 2}  # AnyValue oneof: field -> wire type

Field = tuple[int, int, bytes]  # (number, wire type, payload as encoded after the tag)


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7


def fields(data: bytes) -> list[Field]:
    """The fields of one message (valid wire format: what a parse accepted)."""
    out: list[Field] = []
    at = 0
    while at < len(data):
        tag, at = _read_varint(data, at)
        number, wt = tag >> 3, tag & 7
        start = at
        if wt == 0:
            _, at = _read_varint(data, at)
        elif wt == 1:
            at += 8
        elif wt == 5:
            at += 4
        elif wt == 2:
            n, at = _read_varint(data, at)
            start, at = at, at + n
        else:
            raise ValueError(f"wire type {wt} in a request SerializeToString wrote")
        out.append((number, wt, data[start:at]))
    return out


def encode(number: int, wt: int, payload: bytes) -> bytes:
    tag = varint(number << 3 | wt)
    return tag + varint(len(payload)) + payload if wt == 2 else tag + payload


def _payload(rng: random.Random, wt: int) -> bytes:
    if wt == 0:
        return varint(rng.choice((0, 1, 7, 2**63, 2**64 - 1)))
    if wt == 1:
        return rng.randbytes(8)
    if wt == 5:
        return rng.randbytes(4)
    return rng.choice((b"", b"x", "é".encode(), b"a\x00b"))  # valid UTF-8: a string may take it


def _unknown(rng: random.Random) -> bytes:
    number = rng.choice((99, 1000, 536870911))
    wt = rng.choice((0, 1, 2, 5, 3))
    if wt == 3:  # a group, with a field inside
        return varint(number << 3 | 3) + encode(1, 0, varint(5)) + varint(number << 3 | 4)
    return encode(number, wt, rng.randbytes(5) if wt == 2 else _payload(rng, wt))


def _other_wire_type(rng: random.Random, wt: int) -> int:
    return rng.choice([w for w in (0, 1, 2, 5) if w != wt])


def rewrite(data: bytes, message: str, rng: random.Random, rate: float) -> bytes:
    """One message re-encoded (its sub-messages first), changes drawn at `rate`."""
    out = bytearray()
    inner = SCHEMA[message]
    for number, wt, payload in fields(data):
        if rng.random() < rate:
            out += _unknown(rng)
        if wt == 2 and number in inner:
            if (message, number) in SINGULAR and rng.random() < rate:
                parts = fields(payload)
                cut = rng.randrange(len(parts) + 1)
                for half in (parts[:cut], parts[cut:]):
                    out += encode(number, 2, rewrite(b"".join(encode(*f) for f in half),
                                                     inner[number], rng, rate))
                continue
            payload = rewrite(payload, inner[number], rng, rate)
        if (message, number) in LAST_WINS and rng.random() < rate:
            out += encode(number, wt, _payload(rng, wt))
        if message == "any_value" and number in ANY_MEMBERS and rng.random() < rate:
            other = rng.choice([n for n in ANY_MEMBERS if n != number])
            out += encode(other, ANY_MEMBERS[other], _payload(rng, ANY_MEMBERS[other])
                          if other not in (5, 6) else b"")
        if rng.random() < rate / 2:  # the known field with another wire type: unknown
            other_wt = _other_wire_type(rng, wt)
            out += encode(number, other_wt, _payload(rng, other_wt))
        out += encode(number, wt, payload)
        if rng.random() < rate / 2:  # after the real one too: it must not replace it
            other_wt = _other_wire_type(rng, wt)
            out += encode(number, other_wt, _payload(rng, other_wt))
    if rng.random() < rate:
        out += _unknown(rng)
    return bytes(out)


def variant(data: bytes, rng: random.Random, rate: float = 0.15) -> bytes:
    """A serialised trace request re-encoded as a client may send it (module docstring)."""
    return rewrite(data, "request", rng, rate)
