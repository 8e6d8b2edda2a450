import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Collectors;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;

/**
 * The Kafka Streams 4.4 side of benchmarks/kafka_streams_vs_headrace.py: one of four
 * topologies, written as Kafka Streams' documentation shows, over JSON page views keyed by
 * user ({"user", "page", "amount", "seq", "sent"}):
 *
 *   stateless  keep amount >= 50, map to {"user", "page", "amount_cents", "seq", "sent"}
 *   count      groupByKey().count(), the count as a decimal string
 *   windowed   10 s tumbling windows, no grace, count, suppress(untilWindowCloses(
 *              unbounded())): one final count per window, "user@windowStart" -> count
 *   join       the stream joined with the table of users (user -> "tier-N"): the value
 *              with "tier" added as its last field
 *
 * Arguments: bootstrap topology guarantee app-id input table output state-dir commit-ms
 *            warmup-app-id warmup-input warmup-output   (warm-up ones "-" for none)
 *
 * The JIT warm-up: the same topology first runs under warmup-app-id over warmup-input until
 * that group's committed offsets reach the input's end; that instance is closed, and only
 * then does the measured one (app-id) start, in the same JVM. Runs until SIGTERM (a
 * shutdown hook closes it) or until its stream thread fails (exit 2).
 *
 * One stream thread (num.stream.threads's default, 1); everything else at Kafka Streams'
 * defaults but the commit interval (given, the same as headrace's) and the guarantee.
 */
public class KsBench {
    static final ObjectMapper JSON = new ObjectMapper();
    static final long WINDOW_MS = 10_000;

    static Topology build(String topology, String input, String table, String output) {
        StreamsBuilder b = new StreamsBuilder();
        Consumed<String, String> strings = Consumed.with(Serdes.String(), Serdes.String());
        Produced<String, String> out = Produced.with(Serdes.String(), Serdes.String());
        KStream<String, String> views = b.stream(input, strings);
        switch (topology) {
            case "stateless":
                views.filter((k, v) -> read(v).get("amount").asInt() >= 50)
                        .mapValues(KsBench::mapped)
                        .to(output, out);
                break;
            case "count":
                views.groupByKey()
                        .count()
                        .toStream()
                        .mapValues(n -> Long.toString(n))
                        .to(output, out);
                break;
            case "windowed":
                // suppress, not emitStrategy(onWindowClose()): the latter looks for closed
                // windows at most once a second of wall-clock time, and only as a record
                // arrives, so the windows closed by the input's last records would never go out
                views.groupByKey()
                        .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMillis(WINDOW_MS)))
                        .count()
                        .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
                        .toStream()
                        .map((w, n) -> KeyValue.pair(w.key() + "@" + w.window().start(), Long.toString(n)))
                        .to(output, out);
                break;
            case "join":
                KTable<String, String> users = b.table(table, strings);
                views.join(users, KsBench::enriched).to(output, out);
                break;
            default:
                throw new IllegalArgumentException("no topology " + topology);
        }
        return b.build();
    }

    static JsonNode read(String value) {
        try {
            return JSON.readTree(value);
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static String mapped(String value) {
        JsonNode v = read(value);
        ObjectNode o = JSON.createObjectNode();
        o.set("user", v.get("user"));
        o.set("page", v.get("page"));
        o.put("amount_cents", v.get("amount").asInt() * 100);
        o.set("seq", v.get("seq"));
        o.set("sent", v.get("sent"));
        return o.toString();
    }

    /** The same string operation headrace's joiner does: the tier as the last field. */
    static String enriched(String value, String tier) {
        return value.substring(0, value.length() - 1) + ",\"tier\":\"" + tier + "\"}";
    }

    static Properties props(String bootstrap, String appId, String guarantee, String stateDir, String commitMs) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, commitMs);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
        p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        return p;
    }

    static KafkaStreams start(Topology topology, Properties props, CountDownLatch failed) {
        KafkaStreams streams = new KafkaStreams(topology, props);
        streams.setUncaughtExceptionHandler(e -> {
            StringBuilder chain = new StringBuilder("FAILED");
            for (Throwable t = e; t != null; t = t.getCause()) {
                chain.append(' ').append(t.getClass().getName()).append(": ").append(t.getMessage()).append('\n');
            }
            System.out.print(chain);
            System.out.flush();
            failed.countDown();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();
        return streams;
    }

    /** Until group appId's committed offsets reach the end of every partition of topic. */
    static void awaitConsumed(String bootstrap, String appId, String topic, CountDownLatch failed) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(p)) {
            Set<TopicPartition> parts = admin.describeTopics(Set.of(topic)).allTopicNames().get()
                    .get(topic).partitions().stream()
                    .map(i -> new TopicPartition(topic, i.partition()))
                    .collect(Collectors.toSet());
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            parts.forEach(tp -> latest.put(tp, OffsetSpec.latest()));
            Map<TopicPartition, Long> ends = new HashMap<>();
            admin.listOffsets(latest).all().get().forEach((tp, info) -> ends.put(tp, info.offset()));
            while (true) {
                if (failed.getCount() == 0) {
                    throw new IllegalStateException("the warm-up instance failed");
                }
                Map<TopicPartition, OffsetAndMetadata> done =
                        admin.listConsumerGroupOffsets(appId).partitionsToOffsetAndMetadata().get();
                boolean all = ends.entrySet().stream().allMatch(e -> {
                    OffsetAndMetadata at = done.get(e.getKey());
                    return at != null && at.offset() >= e.getValue();
                });
                if (all) {
                    return;
                }
                Thread.sleep(200);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topology = args[1], guarantee = args[2], appId = args[3];
        String input = args[4], table = args[5], output = args[6], stateDir = args[7], commitMs = args[8];
        String warmAppId = args[9], warmInput = args[10], warmOutput = args[11];
        CountDownLatch failed = new CountDownLatch(1);

        if (!warmAppId.equals("-")) {
            long began = System.nanoTime();
            KafkaStreams warm = start(
                    build(topology, warmInput, table, warmOutput),
                    props(bootstrap, warmAppId, guarantee, stateDir + "-warmup", commitMs),
                    failed);
            awaitConsumed(bootstrap, warmAppId, warmInput, failed);
            warm.close(Duration.ofSeconds(30));
            System.out.printf("WARMED %.1f s%n", (System.nanoTime() - began) / 1e9);
            System.out.flush();
        }

        KafkaStreams streams = start(
                build(topology, input, table, output),
                props(bootstrap, appId, guarantee, stateDir, commitMs),
                failed);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> streams.close(Duration.ofSeconds(20))));
        System.out.println("STARTED");
        System.out.flush();
        failed.await();
        streams.close(Duration.ofSeconds(5));
        System.exit(2);
    }
}
