import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A Kafka Streams 4.4 application under exactly_once_v2, run as two instances (two
 * KafkaStreams objects, each with its own state dir) in one JVM: records keyed by user
 * carry a word; the words are re-keyed (a repartition topic) and counted into a store (a
 * changelog topic), and each new count goes to the output topic.
 *
 * Arguments: bootstrap application-id input-topic output-topic state-dir group-protocol
 *
 * Prints "RUNNING" and each instance's number of active tasks once both instances first
 * are RUNNING, then runs until standard input closes, then closes both and prints
 * "CLOSED". An instance that fails prints "FAILED <exception>" (its cause chain, one per
 * line) and the process exits with 2.
 */
public class EosWordCount {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], appId = args[1], input = args[2], output = args[3];
        Path stateDir = Path.of(args[4]);
        String protocol = args[5];

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .map((user, word) -> KeyValue.pair(word, user))
                .groupByKey(Grouped.with("by-word", Serdes.String(), Serdes.String()))
                .count(Materialized.as("word-counts"))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        List<KafkaStreams> instances = new java.util.concurrent.CopyOnWriteArrayList<>();
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch failed = new CountDownLatch(1);
        for (int i = 0; i < 2; i++) {
            Properties props = new Properties();
            props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
            props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
            props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.resolve("instance-" + i).toString());
            props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, protocol);
            props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
            props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
            props.put(StreamsConfig.consumerPrefix("session.timeout.ms"), "10000");
            props.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), "500");
            KafkaStreams streams = new KafkaStreams(builder.build(), props);
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
            streams.setStateListener((now, before) -> {
                if (instances.stream().allMatch(s -> s.state() == KafkaStreams.State.RUNNING)) {
                    running.countDown();
                }
            });
            instances.add(streams);
        }
        instances.forEach(KafkaStreams::start);

        Thread watch = new Thread(() -> {
            try {
                failed.await();
                instances.forEach(s -> s.close(Duration.ofSeconds(5)));
                System.exit(2);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        watch.setDaemon(true);
        watch.start();

        if (running.await(60, TimeUnit.SECONDS)) {
            StringBuilder tasks = new StringBuilder("RUNNING");
            for (KafkaStreams s : instances) {
                int active = s.metadataForLocalThreads().stream().mapToInt(t -> t.activeTasks().size()).sum();
                tasks.append(' ').append(active);
            }
            System.out.println(tasks);
            System.out.flush();
        }
        while (System.in.read() != -1) {
            // until the test closes standard input
        }
        instances.forEach(s -> s.close(Duration.ofSeconds(10)));
        System.out.println("CLOSED");
        System.out.flush();
    }
}
