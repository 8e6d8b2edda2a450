"""Kafka reads server.properties and client configs with ``java.util.Properties.load``;
``read_properties`` must give what it gives, byte for byte, on the awkward corners of the
format. Each text is read by a small Java program on the JDK beside ours."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from headrace.base import PropertiesError, parse_properties, read_properties
from jvm import compile_java, run_java

DUMP = """
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;

public class PropertiesDump {
    public static void main(String[] args) throws Exception {
        for (String path : args) {
            Properties properties = new Properties();
            try (Reader reader = new InputStreamReader(
                    new FileInputStream(path), StandardCharsets.UTF_8)) {
                properties.load(reader);
                StringBuilder line = new StringBuilder("{");
                for (String key : new TreeSet<>(properties.stringPropertyNames())) {
                    if (line.length() > 1) line.append(',');
                    line.append(quote(key)).append(':').append(quote(properties.getProperty(key)));
                }
                System.out.println(line.append('}'));
            } catch (IllegalArgumentException refused) {
                System.out.println("\\"refused\\"");
            }
        }
    }

    // JSON, every character written as a backslash, u and four hex digits
    static String quote(String text) {
        StringBuilder out = new StringBuilder("\\"");
        for (char c : text.toCharArray()) out.append(String.format("\\\\u%04x", (int) c));
        return out.append('"').toString();
    }
}
"""

TEXTS = {
    "separators": "a=1\nb = 2\nc:3\nd 4\ne\t\tf\n",
    "spaces around": "  key   =   value with spaces   \n",
    "trailing escaped space": "k  =v\\ \n",
    "comments": "# comment\n! also\n   # indented\n\\#not=1\nk=v\n",
    "continuation": "multi=first\\\n    second\\\n  third\na\\\n  b=c\n",
    "even backslashes end a line": "even=back\\\\\nnext=1\n",
    "odd backslashes continue": "trailing=x\\\\\\\n  y\n",
    "a comment inside a continuation": "k=a\\\n# not a comment\n",
    "escapes": "esc=tab\\there\\nnew\\u0041\\=\\:\\q\n",
    "escaped separators in keys": "key\\ with\\ space=v\nkey\\=eq=v\n",
    "second separator is value": "k=v=w\nl:=v\nm = :v\n",
    "no value": "nosep\nempty=\n=novalue\n",
    "last duplicate wins": "dup=1\ndup=2\n",
    "line ends": "k=v\r\nw=x\rz=y\n",
    "unicode": "unicode=\u00e9\u4e2d\n",
    "continuation at the end": "k=\\\n",
    "malformed unicode escape": "k=\\u00zz\n",
}


@pytest.fixture(scope="module")
def java_reads(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    work = tmp_path_factory.mktemp("properties")
    source = work / "PropertiesDump.java"
    source.write_text(DUMP)
    classpath = compile_java([source], work / "classes")
    paths = []
    for index, text in enumerate(TEXTS.values()):
        path = work / f"{index}.properties"
        path.write_bytes(text.encode("utf-8"))
        paths.append(str(path))
    lines = run_java("PropertiesDump", *paths, cp=classpath).stdout.splitlines()
    assert len(lines) == len(TEXTS)
    return {name: json.loads(line) for name, line in zip(TEXTS, lines, strict=True)}


@pytest.mark.parametrize("name", list(TEXTS))
def test_read_as_java_reads_it(name: str, java_reads: dict[str, object]) -> None:
    expected = java_reads[name]
    if expected == "refused":
        with pytest.raises(PropertiesError):
            parse_properties(TEXTS[name])
    else:
        assert parse_properties(TEXTS[name]) == expected


def test_a_file_java_refuses_is_named_in_the_error(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text("security.protocol=SSL\nbad=\\u12\n")
    with pytest.raises(PropertiesError, match=r"client\.properties"):
        read_properties(path)
