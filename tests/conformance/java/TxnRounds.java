import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/** Rounds of: a fresh 2-partition topic; a committed, an aborted and a committed
 *  transaction of 100 records each, alternating over the partitions; a read_uncommitted
 *  and a read_committed reader from the beginning (started right after the
 *  transactions in even rounds, before them in odd ones), each until it has its
 *  expected count (300, 200) or 20 s pass. Prints per round
 *  "round R read_uncommitted N P0 P1" and the same for read_committed, with the
 *  readers' final positions. Args: bootstrap rounds. */
public class TxnRounds {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        int rounds = Integer.parseInt(args[1]);
        Properties a = new Properties();
        a.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(a)) {
            for (int round = 0; round < rounds; round++) {
                String topic = "java-rounds-" + round;
                admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get();
                // Even rounds read after the transactions; odd ones while they are written.
                boolean concurrent = round % 2 == 1;
                String[] results = new String[2];
                Thread[] readers = new Thread[2];
                for (int r = 0; r < 2; r++) {
                    final int which = r;
                    readers[r] = new Thread(() -> results[which] = read(
                        bootstrap, topic, which == 0 ? "read_uncommitted" : "read_committed",
                        which == 0 ? 300 : 200));
                }
                if (concurrent) for (Thread t : readers) t.start();
                produce(bootstrap, topic, round);
                if (!concurrent) for (Thread t : readers) t.start();
                for (Thread t : readers) t.join();
                System.out.println("round " + round + " read_uncommitted " + results[0]);
                System.out.println("round " + round + " read_committed " + results[1]);
            }
        }
    }

    static void produce(String bootstrap, String topic, int round) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", "java-rounds-" + round);
        p.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        p.put("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            int n = 0;
            for (boolean commit : new boolean[] {true, false, true}) {
                producer.beginTransaction();
                for (int i = 0; i < 100; i++, n++) {
                    producer.send(new ProducerRecord<>(topic, n % 2, "k" + n, "v" + n));
                }
                producer.flush();
                if (commit) producer.commitTransaction(); else producer.abortTransaction();
            }
        }
    }

    static String read(String bootstrap, String topic, String isolation, int expected) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("isolation.level", isolation);
        p.put("enable.auto.commit", "false");
        p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            List<TopicPartition> parts =
                List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            int seen = 0;
            long deadline = System.currentTimeMillis() + 20_000;
            while (seen < expected && System.currentTimeMillis() < deadline) {
                seen += consumer.poll(Duration.ofMillis(200)).count();
            }
            return seen + " " + consumer.position(parts.get(0)) + " " + consumer.position(parts.get(1));
        }
    }
}
