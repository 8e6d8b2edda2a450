// Kafka's own KafkaShareConsumer (KIP-932) in explicit acknowledgement mode, reporting
// every delivery on stdout as a line "d MEMBER OFFSET DELIVERY_COUNT ACK".
//
// Usage: ShareMembers BOOTSTRAP TOPIC GROUP SCENARIO TOTAL SECONDS
//   share: two members in two threads share the topic's one partition and ACCEPT
//          everything, until together they have seen TOTAL distinct offsets;
//   acks:  one member acknowledges by offset: offset % 10 == 3 REJECT, offset 5 RELEASE
//          at every delivery (a poison record), offset % 10 == 7 RELEASE at its first
//          delivery and ACCEPT at its second, anything else ACCEPT; it polls on until
//          SECONDS have passed, so that whatever comes back after the rules played out
//          shows in its output.
// Every poll's acknowledgements are committed with commitSync before the next poll; a
// commit's error is reported as "e MEMBER ERROR". "polling MEMBER" says a member's first
// poll has returned; "done MEMBER" ends its output.

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ShareMembers {
    static final long POISON = 5;

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static KafkaShareConsumer<byte[], byte[]> member(String bootstrap, String group, String name) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("client.id", name);
        props.put("share.acknowledgement.mode", "explicit");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        return new KafkaShareConsumer<>(props);
    }

    static AcknowledgeType rule(ConsumerRecord<byte[], byte[]> record) {
        long offset = record.offset();
        int delivery = record.deliveryCount().orElse((short) 1);
        if (offset % 10 == 3) {
            return AcknowledgeType.REJECT;
        }
        if (offset == POISON || (offset % 10 == 7 && delivery == 1)) {
            return AcknowledgeType.RELEASE;
        }
        return AcknowledgeType.ACCEPT;
    }

    static void run(
            String bootstrap, String topic, String group, String name, boolean byRule,
            Set<Long> seen, int total, long deadline) {
        try (KafkaShareConsumer<byte[], byte[]> consumer = member(bootstrap, group, name)) {
            consumer.subscribe(List.of(topic));
            boolean polled = false;
            while (System.currentTimeMillis() < deadline && (byRule || seen.size() < total)) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    AcknowledgeType ack = byRule ? rule(record) : AcknowledgeType.ACCEPT;
                    consumer.acknowledge(record, ack);
                    seen.add(record.offset());
                    Optional<Short> count = record.deliveryCount();
                    say("d " + name + " " + record.offset() + " "
                            + count.map(String::valueOf).orElse("?") + " " + ack.name());
                }
                Map<TopicIdPartition, Optional<KafkaException>> results = consumer.commitSync();
                results.forEach((tp, error) -> error.ifPresent(e -> say("e " + name + " " + e)));
                if (!polled) {
                    polled = true;
                    say("polling " + name);
                }
            }
        }
        say("done " + name);
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String group = args[2];
        String scenario = args[3];
        int total = Integer.parseInt(args[4]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[5]) * 1000;
        Set<Long> seen = ConcurrentHashMap.newKeySet();
        if (scenario.equals("acks")) {
            run(bootstrap, topic, group, "m0", true, seen, total, deadline);
            return;
        }
        Thread[] members = new Thread[2];
        for (int i = 0; i < members.length; i++) {
            String name = "m" + i;
            members[i] = new Thread(() -> run(bootstrap, topic, group, name, false, seen, total, deadline));
            members[i].start();
        }
        for (Thread member : members) {
            member.join();
        }
    }
}
