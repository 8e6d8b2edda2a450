import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsResult;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * OffsetFetch as Kafka 4.4's clients send it, against a broker given as the first argument:
 * a transactional producer sends a group's offset and, before it commits, a consumer (which
 * always sets require_stable, KIP-447) gets no answer while an admin client not asking for
 * stable offsets gets the committed one (none); after the commit the consumer sees it, and an
 * admin client fetches two groups in one batched request. Prints one "name=value" line per
 * observation.
 *
 * Arguments: bootstrap topic group other-group
 */
public class StableOffsetFetch {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        TopicPartition tp = new TopicPartition(args[1], 0);
        String group = args[2];
        String other = args[3];

        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", "stable-" + group);
        try (KafkaProducer<byte[], byte[]> producer =
                        new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
                KafkaConsumer<byte[], byte[]> stable = consumer(bootstrap, group);
                Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            producer.initTransactions();
            producer.beginTransaction();
            producer.sendOffsetsToTransaction(
                    Map.of(tp, new OffsetAndMetadata(42)), new ConsumerGroupMetadata(group));
            ListConsumerGroupOffsetsSpec spec = new ListConsumerGroupOffsetsSpec().topicPartitions(List.of(tp));
            report("admin_before", admin.listConsumerGroupOffsets(Map.of(group, spec))
                    .partitionsToOffsetAndMetadata(group).get().get(tp));
            try {
                report("stable_before", stable.committed(Set.of(tp), Duration.ofSeconds(2)).get(tp));
            } catch (TimeoutException e) {
                report("stable_before", "timeout");
            }
            producer.commitTransaction();
            report("stable_after", stable.committed(Set.of(tp), Duration.ofSeconds(10)).get(tp).offset());

            ListConsumerGroupOffsetsResult both = admin.listConsumerGroupOffsets(
                    Map.of(group, spec, other, spec), new ListConsumerGroupOffsetsOptions().requireStable(true));
            report("admin_group", both.partitionsToOffsetAndMetadata(group).get().get(tp).offset());
            report("admin_other", both.partitionsToOffsetAndMetadata(other).get().get(tp));
        }
    }

    static KafkaConsumer<byte[], byte[]> consumer(String bootstrap, String group) {
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("group.id", group);
        c.put("isolation.level", "read_committed");
        c.put("enable.auto.commit", "false");
        return new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    static void report(String name, Object value) {
        System.out.println(name + "=" + value);
        System.out.flush();
    }
}
