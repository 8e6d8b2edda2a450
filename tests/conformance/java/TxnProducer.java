import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

/** Writes a committed, an aborted and a committed transaction of 100 records each,
 *  alternating over partitions 0 and 1 of the topic. Args: bootstrap topic. */
public class TxnProducer {
    public static void main(String[] args) {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("transactional.id", "java-txn-producer");
        p.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        p.put("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            int n = 0;
            for (boolean commit : new boolean[] {true, false, true}) {
                producer.beginTransaction();
                for (int i = 0; i < 100; i++, n++) {
                    producer.send(new ProducerRecord<>(args[1], n % 2, "k" + n, "v" + n));
                }
                producer.flush();
                if (commit) producer.commitTransaction(); else producer.abortTransaction();
            }
        }
        System.out.println("produced");
    }
}
