// One Java KafkaConsumer with group.protocol=consumer (KIP-848), reporting on stdout as
// JSON lines like tests/conformance/kip848_member.py: {"e": "assign" | "revoke" | "lost",
// "p": [...], "t": wall seconds}, {"e": "rec", "p", "o"}, {"e": "member", "id"},
// {"e": "error", "name"}. A line "leave" on stdin closes the consumer and exits.
// Usage: java -cp 'lib/*' Kip848Member.java BOOTSTRAP TOPIC GROUP NAME

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class Kip848Member {
    static synchronized void say(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static String partitions(Collection<TopicPartition> tps) {
        return tps.stream().map(tp -> Integer.toString(tp.partition())).collect(Collectors.joining(","));
    }

    static double now() {
        return System.currentTimeMillis() / 1000.0;
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("group.id", args[2]);
        props.put("client.id", args[3]);
        props.put("group.protocol", "consumer");
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        AtomicBoolean leave = new AtomicBoolean(false);
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.trim().equals("leave")) {
                        leave.set(true);
                    }
                }
            } catch (Exception e) {
                // stdin closed: the test is gone
            }
        });
        stdin.setDaemon(true);
        stdin.start();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(args[1]), new ConsumerRebalanceListener() {
                public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                    say("{\"e\": \"assign\", \"p\": [" + partitions(tps) + "], \"t\": " + now() + "}");
                }

                public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                    try {
                        consumer.commitSync();
                    } catch (Exception e) {
                        say("{\"e\": \"error\", \"name\": \"commit " + e.getClass().getSimpleName() + "\"}");
                    }
                    say("{\"e\": \"revoke\", \"p\": [" + partitions(tps) + "], \"t\": " + now() + "}");
                }

                public void onPartitionsLost(Collection<TopicPartition> tps) {
                    say("{\"e\": \"lost\", \"p\": [" + partitions(tps) + "], \"t\": " + now() + "}");
                }
            });
            boolean announced = false;
            while (!leave.get()) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                String memberId = consumer.groupMetadata().memberId();
                if (!announced && memberId != null && !memberId.isEmpty()) {
                    announced = true;
                    say("{\"e\": \"member\", \"id\": \"" + memberId + "\"}");
                }
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    say("{\"e\": \"rec\", \"p\": " + r.partition() + ", \"o\": " + r.offset() + "}");
                }
                if (!records.isEmpty()) {
                    try {
                        consumer.commitSync();
                    } catch (Exception e) {
                        Throwable cause = e.getCause() == null ? e : e.getCause();
                        say("{\"e\": \"error\", \"name\": \"commit " + e.getClass().getSimpleName()
                            + "\", \"s\": \"" + cause.getClass().getSimpleName() + "\"}");
                    }
                }
            }
        }
        say("{\"e\": \"closed\", \"t\": " + now() + "}");
    }
}
