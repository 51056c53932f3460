"""Hostile WebAdmin request bodies for the fuzzer: any JSON value, objects with the fields the routes read
holding values of every JSON type and of hostile sizes (thousands of digits, 1e999, deep nesting),
JSON text no parser should accept, and raw octets; sent with or without a content type. ``shaped``
fills a route's own body shape with values that are valid as often as hostile, so the fuzzer gets past
the first check to the code that uses them."""

from __future__ import annotations

import json

from hypothesis import strategies as st

# Every field name a WebAdmin body is read for: users, quotas, maintenance, queues, repositories, vault.
FIELDS = ["password", "count", "size", "reason", "maxDurationSeconds", "delayed", "mailRepository", "combinator",
          "criteria", "limit", "fieldName", "operator", "value", "type", "source", "mapping", "domain"]
RAW_VALUES = ["9" * 5000, "-" + "9" * 30, "1e999", "-1e999", "1.5", "-0", "NaN", "Infinity", "-1", "0",
              "9223372036854775808", "2147483648", "true", "null", '""', '"\\u0000"', '"\\ud800"',
              '"' + "x" * 20000 + '"', "[" * 5000 + "]" * 5000, '{"a":' * 3000 + "1" + "}" * 3000,
              '"beforeOrEquals"', '"2026-13-45T99:99:99Z"', '"and"', '"or"', '"subject"', '"contains"']

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**30), 10**30) | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8),
                                                                      children, max_size=4),
    max_leaves=12)
fragments = st.one_of(json_values.map(lambda v: json.dumps(v, allow_nan=True)), st.sampled_from(RAW_VALUES))


@st.composite
def _object_of_fields(draw: st.DrawFn) -> bytes:
    fields = draw(st.lists(st.tuples(st.sampled_from(FIELDS), fragments), max_size=5))
    return ("{" + ",".join(f'"{name}":{value}' for name, value in fields) + "}").encode()


@st.composite
def _criteria(draw: st.DrawFn) -> bytes:
    """A vault query whose criteria are objects of fields: what reaches the query parser's deepest checks."""
    criteria = draw(st.lists(_object_of_fields(), max_size=3))
    limit = draw(fragments)
    return b'{"combinator":"and","criteria":[' + b",".join(criteria) + b'],"limit":' + limit.encode() + b"}"


@st.composite
def _nested(draw: st.DrawFn) -> bytes:
    """Arrays or objects nested up to 100,000 levels: past any recursive parser's stack."""
    levels = draw(st.one_of(st.integers(1, 200), st.integers(900, 1100), st.integers(1, 100_000)))
    if draw(st.booleans()):
        return b"[" * levels + b"]" * levels
    return b'{"count":' * levels + b"1" + b"}" * levels


bodies = st.one_of(
    json_values.map(lambda v: json.dumps(v, allow_nan=True).encode()),
    _nested(),
    _object_of_fields(),
    _criteria(),
    fragments.map(str.encode),
    st.binary(max_size=200),
    st.sampled_from([b"", b"\xef\xbb\xbf{}", b"{", b"}", b"{'a': 1}", b'{"a":1,}', b"\x00", b"a=1&b=2"]),
)
content_types = st.one_of(st.none(), st.sampled_from([
    "application/json", "text/plain", "multipart/form-data", "application/x-www-form-urlencoded",
    "application/json; charset=latin-1"]))

# Each route's body: a template and, for each of its values ({}), what the route accepts there.
SHAPES: dict[str, tuple[str, list[list[str]]]] = {
    "user": ('{{"password":{}}}', [['"secret-password"', '"p"']]),
    "quota": ('{{"count":{},"size":{}}}', [["1", "-1", "null", "9223372036854775807"]] * 2),
    "maintenance": ('{{"reason":{},"maxDurationSeconds":{}}}', [['"window"', "null"], ["60", "604800", "null"]]),
    "flush": ('{{"delayed":{}}}', [["false"]]),
    "move": ('{{"mailRepository":{}}}', [['"var/mail/x/"', '"var/mail/caf\\u00e9/"']]),
    "vault": ('{{"combinator":"and","criteria":[{{"fieldName":{},"operator":{},"value":{}}}],"limit":{}}}',
              [['"subject"', '"deliveryDate"', '"recipients"', '"hasAttachment"'],
               ['"contains"', '"beforeOrEquals"', '"equals"'], ['"x"', '"2026-11-25T08:00:00Z"', '"true"'],
               ["10", "null"]]),
    "mappings": ('{{{}:[{{"type":{},"mapping":{}}}]}}',
                 [['"a@parts.test"'], ['"Address"', '"Domain"', '"Forward"'], ['"b@parts.test"', '"parts.test"']]),
    "text": ("{}", [["parts.test", "1", "-1", "13"]]),
}


@st.composite
def shaped(draw: st.DrawFn, shape: str) -> bytes:
    """The route's body, each value accepted there three times in four, else hostile."""
    template, accepted = SHAPES[shape]
    values = [draw(st.one_of(st.sampled_from(ok), st.sampled_from(ok), st.sampled_from(ok), fragments))
              for ok in accepted]
    if shape == "mappings" and not values[0].startswith('"'):   # an object key is a string
        values[0] = json.dumps(values[0])
    return template.format(*values).encode()
