"""Faust's word count, ported: two agents and a table.

The faust original splits posts into words, sends each word on to a second agent keyed
by the word (so every count of one word lives in one partition) and counts them in a
table. Here the first agent ``yield``s ``(word, word)`` to ``words`` instead of calling
``count_words.send``: the result is written by the topology, so it commits with the
post's offset (in one transaction under exactly-once). The second agent counts in the
table ``word-counts`` (RocksDB, changelogged) and writes each new count to
``word-counts``. ``posts`` and ``words`` need the same number of partitions: the table
is shared by the app's agents, as in faust.

Run it with ``headrace run headrace.examples.faust_word_count:app``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from headrace import AgentApp, AgentStream, Serdes

POSTS, WORDS, COUNTS = "posts", "words", "word-counts"

app = AgentApp("word-count")
string = Serdes.string()
posts = app.topic(POSTS, key_serde=string, value_serde=string)
words = app.topic(WORDS, key_serde=string, value_serde=string)
counts_topic = app.topic(COUNTS, key_serde=string, value_serde=Serdes.long())
word_counts = app.table("word-counts", default=int)


@app.agent(posts, sink=words)
async def shuffle_words(stream: AgentStream) -> AsyncIterator[tuple[str, str]]:
    async for post in stream.values():
        for word in post.split():
            yield word, word


@app.agent(words, sink=counts_topic)
async def count_words(stream: AgentStream) -> AsyncIterator[tuple[str, int]]:
    async for word, _same in stream:
        word_counts[word] += 1
        yield word, word_counts[word]
