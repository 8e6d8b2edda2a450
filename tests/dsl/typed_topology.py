"""A user's typed topology: strict mypy must accept it as it is (the tree's type check
reads it), and refuse it once a value is used as the wrong type
(``test_user_typing.py`` breaks a copy). Each ``assert_type`` pins what an operator
returns, so a DSL signature that loses its types fails here."""

from __future__ import annotations

from datetime import timedelta
from typing import assert_type

from headrace import Serdes, StreamsBuilder, TimeWindows
from headrace.dsl import KGroupedStream, KStream, KTable, Windowed


def build() -> StreamsBuilder:
    builder = StreamsBuilder()
    words = builder.stream("words", key_serde=Serdes.string(), value_serde=Serdes.string())
    assert_type(words, KStream[str, str])

    lengths = words.map_values(len)
    assert_type(lengths, KStream[str, int])
    doubled = lengths.map_values(lambda n: n * 2)  # DOWNSTREAM
    assert_type(doubled, KStream[str, int])
    tagged = words.map_values(lambda key, word: f"{key}:{word}", with_key=True)
    assert_type(tagged, KStream[str, str])
    by_first = words.select_key(lambda key, word: word[:1])
    assert_type(by_first, KStream[str, str])
    pairs = words.map(lambda key, word: (len(word), word.upper()))
    assert_type(pairs, KStream[int, str])
    letters = words.flat_map_values(list)
    assert_type(letters, KStream[str, str])

    grouped = words.group_by_key()
    assert_type(grouped, KGroupedStream[str, str])
    counts = grouped.count()
    assert_type(counts, KTable[str, int])
    longest = grouped.reduce(lambda a, b: a if len(a) >= len(b) else b)
    assert_type(longest, KTable[str, str])
    totals = lengths.group_by_key().aggregate(lambda: 0.0, lambda key, n, total: total + n)
    assert_type(totals, KTable[str, float])
    windowed = grouped.windowed_by(TimeWindows.of_size(timedelta(minutes=1))).count()
    assert_type(windowed, KTable[Windowed[str], int])

    joined = words.join(counts, lambda word, count: (word, count))
    assert_type(joined, KStream[str, tuple[str, int]])
    joined.map_values(lambda pair: pair[1] + 1).to("counted")
    counts.to_stream().to("counts")
    doubled.to("doubled", value_serde=Serdes.integer())
    letters.to("letters")
    return builder
