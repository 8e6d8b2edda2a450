// The reference Java client against a secured listener: a transaction of three records,
// then a read_committed consumer in a group reads them back and commits.
// Run as a single-file program: java -cp JARS SecureRoundTrip.java BOOTSTRAP PROPS TOPIC GROUP TXN
import java.io.FileReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class SecureRoundTrip {
    public static void main(String[] args) throws Exception {
        Properties security = new Properties();
        try (FileReader reader = new FileReader(args[1])) {
            security.load(reader);
        }
        Properties producerProps = new Properties();
        producerProps.putAll(security);
        producerProps.put("bootstrap.servers", args[0]);
        producerProps.put("transactional.id", args[4]);
        producerProps.put("key.serializer", StringSerializer.class.getName());
        producerProps.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps)) {
            producer.initTransactions();
            producer.beginTransaction();
            for (String value : new String[] {"a", "b", "c"}) {
                producer.send(new ProducerRecord<>(args[2], value));
            }
            producer.commitTransaction();
        }
        Properties consumerProps = new Properties();
        consumerProps.putAll(security);
        consumerProps.put("bootstrap.servers", args[0]);
        consumerProps.put("group.id", args[3]);
        consumerProps.put("auto.offset.reset", "earliest");
        consumerProps.put("enable.auto.commit", "false");
        consumerProps.put("isolation.level", "read_committed");
        consumerProps.put("key.deserializer", StringDeserializer.class.getName());
        consumerProps.put("value.deserializer", StringDeserializer.class.getName());
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps)) {
            consumer.subscribe(List.of(args[2]));
            long deadline = System.currentTimeMillis() + 30_000;
            while (got.size() < 3 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofSeconds(1))) {
                    got.add(record.value());
                }
            }
            consumer.commitSync();
        }
        for (String value : got) {
            System.out.println(value);
        }
    }
}
