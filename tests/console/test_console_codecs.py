"""How the message browser shows bytes: the formats, and the registry's wire format
when no registry answers (the registry's happy path runs in the browser tests)."""

from __future__ import annotations

import struct

from brokerproc import free_port

from headrace.console._codecs import Decoder
from headrace.console._registry_values import RegistryValues

FRAMED = b"\x00" + struct.pack(">I", 7) + b"\x02ab"


def test_plain_formats_and_what_does_not_fit_them() -> None:
    decoder = Decoder(None)
    assert decoder.decode(b"text", "auto") == "text"
    assert decoder.decode(struct.pack(">q", 42), "long") == "42"
    assert decoder.decode(None, "json") is None
    assert decoder.problem is None
    assert decoder.decode(b"not json", "json") == "hex:6e6f74206a736f6e"
    assert decoder.problem is not None and "Expecting value" in decoder.problem


def test_asking_for_the_registry_without_one_says_so() -> None:
    decoder = Decoder(None)
    assert decoder.decode(FRAMED, "schema-registry") == f"hex:{FRAMED.hex()}"
    assert decoder.problem is not None and "--schema-registry" in decoder.problem


def test_a_registry_that_does_not_answer_leaves_values_as_hex_and_says_why() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    decoder = Decoder(RegistryValues(url))
    assert decoder.decode(b"plain", "auto") == "plain"  # not framed: never asked
    assert decoder.problem is None
    assert decoder.decode(FRAMED, "auto") == f"hex:{FRAMED.hex()}"
    assert decoder.problem is not None and url in decoder.problem
