import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.ValueTransformerWithKey;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.ProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowStore;

/**
 * The Kafka Streams half of each pair; tests/ks_oracle/topologies*.py hold the headrace
 * half under the same id and say what each exercises. Strings and longs only, so both
 * sides write the same bytes; joiners render a missing side as "null".
 */
final class KsTopologies {
  private static final Serde<String> S = Serdes.String();
  private static final Serde<Long> L = Serdes.Long();

  /**
   * The store retention of the emit-final pairs, headrace's default. Kafka Streams' default
   * (size + grace) lets a store drop closed windows before they are emitted when stream time
   * jumps by more than that in one record, as the far-future record does.
   */
  private static final Duration DAY = Duration.ofDays(1);

  private KsTopologies() {}

  private static String s(Object o) {
    return String.valueOf(o);
  }

  private static KStream<String, Long> longs(StreamsBuilder b, String topic) {
    return b.stream(topic, Consumed.with(S, L));
  }

  private static KStream<String, String> strings(StreamsBuilder b, String topic) {
    return b.stream(topic, Consumed.with(S, S));
  }

  private static KTable<String, Long> longTable(StreamsBuilder b, String topic) {
    return b.table(topic, Consumed.with(S, L), Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>with(S, L).withCachingDisabled());
  }

  /** A table kept in a versioned store: {@code historyMs} of history per key. */
  private static KTable<String, Long> versionedTable(StreamsBuilder b, String topic, long historyMs) {
    return b.table(
        topic,
        Consumed.with(S, L),
        Materialized.<String, Long>as(
                Stores.persistentVersionedKeyValueStore(topic + "-versions", Duration.ofMillis(historyMs)))
            .withKeySerde(S)
            .withValueSerde(L));
  }

  private static KTable<String, String> stringTable(StreamsBuilder b, String topic) {
    return b.table(
        topic, Consumed.with(S, S), Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(S, S).withCachingDisabled());
  }

  private static Materialized<String, Long, KeyValueStore<Bytes, byte[]>> kvL() {
    return Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>with(S, L).withCachingDisabled();
  }

  private static Materialized<String, String, KeyValueStore<Bytes, byte[]>> kvS() {
    return Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(S, S).withCachingDisabled();
  }

  private static Materialized<String, Long, WindowStore<Bytes, byte[]>> winL() {
    return Materialized.<String, Long, WindowStore<Bytes, byte[]>>with(S, L).withCachingDisabled();
  }

  private static Materialized<String, String, WindowStore<Bytes, byte[]>> winS() {
    return Materialized.<String, String, WindowStore<Bytes, byte[]>>with(S, S).withCachingDisabled();
  }

  private static Materialized<String, Long, SessionStore<Bytes, byte[]>> sesL() {
    return Materialized.<String, Long, SessionStore<Bytes, byte[]>>with(S, L).withCachingDisabled();
  }

  private static Materialized<String, String, SessionStore<Bytes, byte[]>> sesS() {
    return Materialized.<String, String, SessionStore<Bytes, byte[]>>with(S, S).withCachingDisabled();
  }

  private static Produced<Windowed<String>, Long> timeWindowedL(long size) {
    return Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, size), L);
  }

  private static Produced<Windowed<String>, String> timeWindowedS(long size) {
    return Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, size), S);
  }

  private static Produced<Windowed<String>, Long> sessionWindowedL() {
    return Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), L);
  }

  private static Produced<Windowed<String>, String> sessionWindowedS() {
    return Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), S);
  }

  private static KGroupedStream<String, Long> groupedLongs(StreamsBuilder b) {
    return longs(b, "in").groupByKey(Grouped.with(S, L));
  }

  private static final Produced<String, Long> SL = Produced.with(S, L);
  private static final Produced<String, String> SS = Produced.with(S, S);

  static void build(String id, StreamsBuilder b) {
    switch (id) {
      // -- stateless ---------------------------------------------------------------------
      case "filter_map_values": {
        KStream<String, Long> in = longs(b, "in");
        in.filter((k, v) -> v != null && v % 2 == 0).mapValues(v -> v * 10).to("out", SL);
        in.filterNot((k, v) -> k == null).mapValues(v -> v == null ? -1L : v + 1).to("out2", SL);
        break;
      }
      case "map_select_key": {
        KStream<String, Long> in = longs(b, "in");
        in.map((k, v) -> KeyValue.pair(v == null ? "none" : "v" + v, k == null ? "nokey" : k))
            .to("out", SS);
        in.selectKey((k, v) -> k == null ? null : k + "!").to("out2", SL);
        break;
      }
      case "flat_map_values": {
        KStream<String, String> in = strings(b, "in");
        in.flatMapValues(
                v -> {
                  List<String> parts = new ArrayList<>();
                  if (v != null) {
                    for (char ch : v.toCharArray()) {
                      parts.add(String.valueOf(ch));
                    }
                  }
                  return parts;
                })
            .to("out", SS);
        in.flatMap(
                (k, v) -> {
                  List<KeyValue<String, Long>> kvs = new ArrayList<>();
                  if (v != null) {
                    kvs.add(KeyValue.pair(k, (long) v.length()));
                    kvs.add(KeyValue.pair(v, 1L));
                  }
                  return kvs;
                })
            .to("out2", SL);
        break;
      }
      case "split_merge": {
        Map<String, KStream<String, Long>> branches =
            longs(b, "in")
                .peek((k, v) -> {})
                .split(Named.as("split-"))
                .branch((k, v) -> v != null && v < 3, Branched.as("small"))
                .branch((k, v) -> v != null && v < 7, Branched.as("mid"))
                .defaultBranch(Branched.as("rest"));
        KStream<String, String> small = branches.get("split-small").mapValues(v -> "s" + v);
        KStream<String, String> mid = branches.get("split-mid").mapValues(v -> "m" + v);
        KStream<String, String> rest = branches.get("split-rest").mapValues(v -> "r" + s(v));
        small.merge(mid).merge(rest).to("out", SS);
        branches.get("split-rest").to("out2", SL);
        break;
      }
      case "async_operators": {
        KStream<String, Long> in = longs(b, "in");
        in.filter((k, v) -> v != null && v % 2 == 0)
            .mapValues(v -> v == null ? -1L : v * 10)
            .to("out", SL);
        in.flatMapValues(v -> v == null ? List.<Long>of() : List.of(v, v + 100)).to("out2", SL);
        break;
      }
      case "repartition_count":
        longs(b, "in")
            .selectKey((k, v) -> v == null ? null : "k" + (v % 3))
            .repartition(Repartitioned.with(S, L))
            .groupByKey(Grouped.with(S, L))
            .count(kvL())
            .toStream()
            .to("out", SL);
        break;
      // -- stream aggregations -----------------------------------------------------------
      case "count_by_key":
        groupedLongs(b).count(kvL()).toStream().to("out", SL);
        break;
      case "reduce_sum":
        groupedLongs(b).reduce(Long::sum, kvL()).toStream().to("out", SL);
        break;
      case "aggregate_concat":
        strings(b, "in")
            .groupByKey(Grouped.with(S, S))
            .aggregate(() -> "", (k, v, agg) -> agg + "|" + s(v), kvS())
            .toStream()
            .to("out", SS);
        break;
      case "group_by_count":
        longs(b, "in")
            .groupBy((k, v) -> v == null ? null : "g" + (v % 3), Grouped.with(S, L))
            .count(kvL())
            .toStream()
            .to("out", SL);
        break;
      // -- time windows ------------------------------------------------------------------
      case "tumbling_count":
        groupedLongs(b)
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(1000), Duration.ofMillis(500)))
            .count(winL())
            .toStream()
            .to("out", timeWindowedL(1000));
        break;
      case "hopping_reduce":
        groupedLongs(b)
            .windowedBy(
                TimeWindows.ofSizeAndGrace(Duration.ofMillis(1000), Duration.ofMillis(300))
                    .advanceBy(Duration.ofMillis(250)))
            .reduce(KsTopologies::sumSkippingNull, winL())
            .toStream()
            .to("out", timeWindowedL(1000));
        break;
      case "tumbling_suppress":
        groupedLongs(b)
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(1000), Duration.ofMillis(200)))
            .count(winL())
            .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
            .toStream()
            .to("out", timeWindowedL(1000));
        break;
      case "hopping_emit_final":
        groupedLongs(b)
            .windowedBy(
                TimeWindows.ofSizeAndGrace(Duration.ofMillis(1000), Duration.ofMillis(200))
                    .advanceBy(Duration.ofMillis(500)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> 0L, (k, v, agg) -> agg + (v == null ? 100 : v), winL().withRetention(DAY))
            .toStream()
            .to("out", timeWindowedL(1000));
        break;
      case "tumbling_no_grace_aggregate":
        strings(b, "in")
            .groupByKey(Grouped.with(S, S))
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMillis(500)))
            .aggregate(() -> "", (k, v, agg) -> agg + "|" + s(v), winS())
            .toStream()
            .to("out", timeWindowedS(500));
        break;
      // -- sliding windows ---------------------------------------------------------------
      case "sliding_count":
        groupedLongs(b)
            .windowedBy(
                SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(1000), Duration.ofMillis(500)))
            .count(winL())
            .toStream()
            .to("out", timeWindowedL(1000));
        break;
      case "sliding_suppress":
        groupedLongs(b)
            .windowedBy(
                SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(500), Duration.ofMillis(200)))
            .reduce(KsTopologies::sumSkippingNull, winL())
            .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
            .toStream()
            .to("out", timeWindowedL(500));
        break;
      case "sliding_emit_final":
        groupedLongs(b)
            .windowedBy(
                SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(1000), Duration.ofMillis(300)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .count(winL().withRetention(DAY))
            .toStream()
            .to("out", timeWindowedL(1000));
        break;
      // -- session windows ---------------------------------------------------------------
      case "session_count":
        groupedLongs(b)
            .windowedBy(
                SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(500), Duration.ofMillis(300)))
            .count(sesL())
            .toStream()
            .to("out", sessionWindowedL());
        break;
      case "session_aggregate":
        strings(b, "in")
            .groupByKey(Grouped.with(S, S))
            .windowedBy(
                SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(400), Duration.ofMillis(200)))
            .aggregate(
                () -> "",
                (k, v, agg) -> agg + "|" + s(v),
                (k, left, right) -> left + "&" + right,
                sesS())
            .toStream()
            .to("out", sessionWindowedS());
        break;
      case "session_suppress":
        groupedLongs(b)
            .windowedBy(
                SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(500), Duration.ofMillis(100)))
            .reduce(KsTopologies::sumSkippingNull, sesL())
            .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
            .toStream()
            .to("out", sessionWindowedL());
        break;
      case "session_emit_final":
        groupedLongs(b)
            .windowedBy(
                SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(300), Duration.ofMillis(300)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .count(sesL().withRetention(DAY))
            .toStream()
            .to("out", sessionWindowedL());
        break;
      // -- cogroup, to_table, process_values ---------------------------------------------
      case "cogroup_aggregate":
        longs(b, "in")
            .groupByKey(Grouped.with(S, L))
            .<String>cogroup((k, v, agg) -> agg + "|L" + s(v))
            .cogroup(
                strings(b, "in2").groupBy((k, v) -> v == null ? null : v.substring(0, 1), Grouped.with(S, S)),
                (k, v, agg) -> agg + "|S" + s(v))
            .aggregate(() -> "", kvS())
            .toStream()
            .to("out", SS);
        break;
      case "cogroup_tumbling":
        longs(b, "in")
            .groupByKey(Grouped.with(S, L))
            .<String>cogroup((k, v, agg) -> agg + "|L" + s(v))
            .cogroup(strings(b, "in2").groupByKey(Grouped.with(S, S)), (k, v, agg) -> agg + "|S" + s(v))
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(1000), Duration.ofMillis(500)))
            .aggregate(() -> "", winS())
            .toStream()
            .to("out", timeWindowedS(1000));
        break;
      case "cogroup_session":
        longs(b, "in")
            .groupByKey(Grouped.with(S, L))
            .<String>cogroup((k, v, agg) -> agg + "|L" + s(v))
            .cogroup(strings(b, "in2").groupByKey(Grouped.with(S, S)), (k, v, agg) -> agg + "|S" + s(v))
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(400), DAY))
            .aggregate(() -> "", (k, left, right) -> left + "&" + right, sesS())
            .toStream()
            .to("out", sessionWindowedS());
        break;
      case "stream_to_table": {
        KStream<String, Long> in = longs(b, "in");
        in.toTable(kvL()).toStream().to("out", SL);
        in.selectKey((k, v) -> v == null ? null : "k" + (v % 3)).toTable(kvL()).toStream().to("out2", SL);
        break;
      }
      case "process_values_sums":
        b.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("sums"), S, L));
        longs(b, "in").processValues(RunningSum::new, "sums").to("out", SL);
        break;
      // -- tables ------------------------------------------------------------------------
      case "table_filter_map_values": {
        KTable<String, Long> t = longTable(b, "in");
        t.filter((k, v) -> v % 2 == 0).mapValues(v -> v * 3).toStream().to("out", SL);
        t.filterNot((k, v) -> v > 5).toStream().to("out2", SL);
        break;
      }
      case "table_to_stream":
        longTable(b, "in").mapValues((k, v) -> k + "=" + v).toStream().to("out", SS);
        break;
      case "table_group_by_count":
        longTable(b, "in")
            .groupBy((k, v) -> KeyValue.pair("g" + (v % 3), v), Grouped.with(S, L))
            .count(kvL())
            .toStream()
            .to("out", SL);
        break;
      case "table_group_by_reduce":
        longTable(b, "in")
            .groupBy((k, v) -> KeyValue.pair(v % 2 == 0 ? "even" : "odd", v), Grouped.with(S, L))
            .reduce(Long::sum, (agg, v) -> agg - v, kvL())
            .toStream()
            .to("out", SL);
        break;
      case "table_group_by_aggregate":
        stringTable(b, "in")
            .groupBy((k, v) -> KeyValue.pair(v.substring(0, 1), k + ":" + v), Grouped.with(S, S))
            .aggregate(() -> "", (k, v, agg) -> agg + "+" + v, (k, v, agg) -> agg + "-" + v, kvS())
            .toStream()
            .to("out", SS);
        break;
      case "table_transform_values": {
        b.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("seen"), S, L));
        KTable<String, Long> t = longTable(b, "in");
        t.transformValues(Seen::new, "seen").toStream().to("out", SS);
        longs(b, "orders")
            .leftJoin(t.transformValues(Tagged::new), (o, v) -> s(o) + "/" + s(v), Joined.with(S, L, S))
            .to("out2", SS);
        break;
      }
      case "table_suppress_time_limit": {
        KTable<String, Long> t = longTable(b, "in");
        t.suppress(Suppressed.untilTimeLimit(Duration.ofMillis(300), Suppressed.BufferConfig.unbounded()))
            .toStream()
            .to("out", SL);
        t.filter((k, v) -> v > 4)
            .suppress(
                Suppressed.untilTimeLimit(
                    Duration.ofMillis(200), Suppressed.BufferConfig.maxRecords(2).emitEarlyWhenFull()))
            .toStream()
            .to("out2", SL);
        break;
      }
      // -- stream-stream joins -----------------------------------------------------------
      case "ss_inner":
        longs(b, "left")
            .join(
                longs(b, "right"),
                (l, r) -> s(l) + "+" + s(r),
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(500), Duration.ofMillis(200))
                    .after(Duration.ofMillis(100)),
                StreamJoined.with(S, L, L))
            .to("out", SS);
        break;
      case "ss_inner_no_grace":
        longs(b, "left")
            .join(
                longs(b, "right"),
                (k, l, r) -> k + ":" + s(l) + "+" + s(r),
                JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMillis(250)),
                StreamJoined.with(S, L, L))
            .to("out", SS);
        break;
      case "ss_left":
        longs(b, "left")
            .leftJoin(
                longs(b, "right"),
                (l, r) -> s(l) + "+" + s(r),
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(300), Duration.ofMillis(100))
                    .before(Duration.ofMillis(600)),
                StreamJoined.with(S, L, L))
            .to("out", SS);
        break;
      case "ss_outer":
        longs(b, "left")
            .outerJoin(
                longs(b, "right"),
                (l, r) -> s(l) + "+" + s(r),
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(400), Duration.ofMillis(150))
                    .before(Duration.ofMillis(200)),
                StreamJoined.with(S, L, L))
            .to("out", SS);
        break;
      // -- stream-table and stream-global-table joins ------------------------------------
      case "stream_table_inner":
        longs(b, "left")
            .join(longTable(b, "right"), (l, r) -> s(l) + "+" + s(r), Joined.with(S, L, L))
            .to("out", SS);
        break;
      case "stream_table_left":
        longs(b, "left")
            .leftJoin(longTable(b, "right"), (l, r) -> s(l) + "+" + s(r), Joined.with(S, L, L))
            .to("out", SS);
        break;
      case "stream_table_rekeyed":
        longs(b, "left")
            .selectKey((k, v) -> v == null ? null : "k" + (v % 4))
            .join(longTable(b, "right"), (l, r) -> s(l) + "+" + s(r), Joined.with(S, L, L))
            .to("out", SS);
        break;
      // -- versioned tables (KIP-889) and joins as of the stream record's time (KIP-914) --
      case "versioned_table_to_stream":
        versionedTable(b, "in", 1000).toStream().to("out", Produced.with(S, L));
        versionedTable(b, "in2", 300).mapValues(v -> v * 10).toStream().to("out2", Produced.with(S, L));
        break;
      case "stream_versioned_table_inner":
        longs(b, "left")
            .join(versionedTable(b, "right", 1000), (l, r) -> s(l) + "+" + s(r), Joined.with(S, L, L))
            .to("out", SS);
        break;
      case "stream_versioned_table_left":
        longs(b, "left")
            .leftJoin(versionedTable(b, "right", 300), (l, r) -> s(l) + "+" + s(r), Joined.with(S, L, L))
            .to("out", SS);
        break;
      case "stream_versioned_table_inner_grace":
        longs(b, "left")
            .join(
                versionedTable(b, "right", 1000),
                (l, r) -> s(l) + "+" + s(r),
                Joined.with(S, L, L).withGracePeriod(Duration.ofMillis(500)))
            .to("out", SS);
        break;
      case "stream_versioned_table_left_grace":
        // Kafka Streams fails on a null key here (its buffer refuses it): none reach it.
        longs(b, "left")
            .filter((k, v) -> k != null)
            .leftJoin(
                versionedTable(b, "right", 1000),
                (l, r) -> s(l) + "+" + s(r),
                Joined.with(S, L, L).withGracePeriod(Duration.ofMillis(1000)))
            .to("out", SS);
        break;
      case "stream_global_inner": {
        GlobalKTable<String, String> g = b.globalTable("glob", Consumed.with(S, S));
        longs(b, "in")
            .join(g, (k, v) -> v == null ? null : "g" + (v % 4), (v, gv) -> s(v) + "/" + s(gv))
            .to("out", SS);
        break;
      }
      case "stream_global_left": {
        GlobalKTable<String, String> g = b.globalTable("glob", Consumed.with(S, S));
        longs(b, "in")
            .leftJoin(g, (k, v) -> v == null ? null : "g" + (v % 4), (v, gv) -> s(v) + "/" + s(gv))
            .to("out", SS);
        break;
      }
      // -- table-table joins -------------------------------------------------------------
      case "tt_inner":
        longTable(b, "left")
            .join(longTable(b, "right"), (l, r) -> s(l) + "+" + s(r))
            .toStream()
            .to("out", SS);
        break;
      case "tt_left":
        longTable(b, "left")
            .leftJoin(longTable(b, "right"), (l, r) -> s(l) + "+" + s(r))
            .toStream()
            .to("out", SS);
        break;
      case "tt_outer":
        longTable(b, "left")
            .outerJoin(longTable(b, "right"), (l, r) -> s(l) + "+" + s(r))
            .toStream()
            .to("out", SS);
        break;
      case "fk_inner":
        stringTable(b, "orders")
            .join(longTable(b, "customers"), KsTopologies::foreignKey, (o, c) -> o + "*" + s(c))
            .toStream()
            .to("out", SS);
        break;
      case "fk_left":
        stringTable(b, "orders")
            .leftJoin(longTable(b, "customers"), KsTopologies::foreignKey, (o, c) -> o + "*" + s(c))
            .toStream()
            .to("out", SS);
        break;
      default:
        throw new IllegalArgumentException("no topology " + id);
    }
  }

  /** Windowed aggregations hand null values to the reducer: they add nothing. */
  private static Long sumSkippingNull(Long aggregate, Long value) {
    return value == null ? aggregate : aggregate + value;
  }

  /** An order "c2|7" names customer "c2"; "-|7" names none. */
  private static String foreignKey(String order) {
    String fk = order.split("\\|")[0];
    return fk.equals("-") ? null : fk;
  }

  /** A running sum per key in the store "sums"; an even sum also goes out tenfold, 1 ms later. */
  private static final class RunningSum implements FixedKeyProcessor<String, Long, Long> {
    private FixedKeyProcessorContext<String, Long> context;
    private KeyValueStore<String, Long> sums;

    @Override
    public void init(FixedKeyProcessorContext<String, Long> context) {
      this.context = context;
      this.sums = context.getStateStore("sums");
    }

    @Override
    public void process(FixedKeyRecord<String, Long> record) {
      if (record.key() == null || record.value() == null) {
        context.forward(record.withValue(-1L));
        return;
      }
      Long old = sums.get(record.key());
      long total = (old == null ? 0 : old) + record.value();
      sums.put(record.key(), total);
      context.forward(record.withValue(total));
      if (total % 2 == 0) {
        context.forward(record.withValue(total * 10).withTimestamp(record.timestamp() + 1));
      }
    }
  }

  /** The value and how many times the key was transformed (the store "seen"). */
  private static final class Seen implements ValueTransformerWithKey<String, Long, String> {
    private KeyValueStore<String, Long> seen;

    @Override
    public void init(ProcessorContext context) {
      this.seen = context.getStateStore("seen");
    }

    @Override
    public String transform(String key, Long value) {
      Long old = seen.get(key);
      long n = (old == null ? 0 : old) + 1;
      seen.put(key, n);
      return s(value) + "#" + n;
    }

    @Override
    public void close() {}
  }

  /** The value tagged, "T" + value ("Tnull" for none). */
  private static final class Tagged implements ValueTransformerWithKey<String, Long, String> {
    @Override
    public void init(ProcessorContext context) {}

    @Override
    public String transform(String key, Long value) {
      return "T" + s(value);
    }

    @Override
    public void close() {}
  }
}
