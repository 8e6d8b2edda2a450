import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;

/** Reads partitions 0 and 1 of a topic from the beginning until it has seen the
 *  expected number of records or 20 s pass, then prints "seen N" and each position.
 *  Args: bootstrap topic isolation.level expected. */
public class CountingConsumer {
    public static void main(String[] args) {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("isolation.level", args[2]);
        p.put("enable.auto.commit", "false");
        p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        int expected = Integer.parseInt(args[3]);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            List<TopicPartition> parts =
                List.of(new TopicPartition(args[1], 0), new TopicPartition(args[1], 1));
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            int seen = 0;
            long deadline = System.currentTimeMillis() + 20_000;
            while (seen < expected && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    seen++;
                }
            }
            System.out.println("seen " + seen);
            for (TopicPartition tp : parts) {
                System.out.println("position " + tp.partition() + " " + consumer.position(tp));
            }
        }
    }
}
