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
//          shows in its output;
//   limit: one member with share.acquire.mode=record_limit and max.poll.records=7
//          ACCEPTs everything; each non-empty poll is reported as "poll MEMBER COUNT";
//   expire: m0 polls once and holds what it got, unacknowledged, reporting
//          "lock m0 MS" (the acquisition lock the broker gave) and each record as
//          HELD; m1 then ACCEPTs until it has seen TOTAL offsets (the held ones come
//          back to it once their lock runs out);
//   renew: m0 keeps each record it gets by acknowledging it RENEW (the client hands a
//          renewed record back on the next poll) until 6 s have passed since it got
//          it, then ACCEPTs it; m1, started once m0 holds records, ACCEPTs whatever
//          reaches it until m0 has accepted all it got. A commit error of m0 ends both.
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
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ShareMembers {
    static final long POISON = 5;
    static final long HOLD_MS = 6000;

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static KafkaShareConsumer<byte[], byte[]> member(
            String bootstrap, String group, String name, Map<String, String> extra) {
        Properties props = new Properties();
        props.putAll(extra);
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

    static void report(String name, ConsumerRecord<byte[], byte[]> record, String ack) {
        Optional<Short> count = record.deliveryCount();
        say("d " + name + " " + record.offset() + " "
                + count.map(String::valueOf).orElse("?") + " " + ack);
    }

    static void run(
            String bootstrap, String topic, String group, String name, boolean byRule,
            Set<Long> seen, int total, long deadline, Map<String, String> extra) {
        try (KafkaShareConsumer<byte[], byte[]> consumer = member(bootstrap, group, name, extra)) {
            consumer.subscribe(List.of(topic));
            boolean polled = false;
            while (System.currentTimeMillis() < deadline && (byRule || seen.size() < total)) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                if (!records.isEmpty()) {
                    say("poll " + name + " " + records.count());
                }
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    AcknowledgeType ack = byRule ? rule(record) : AcknowledgeType.ACCEPT;
                    consumer.acknowledge(record, ack);
                    seen.add(record.offset());
                    report(name, record, ack.name());
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

    /** m0 takes a poll's records and holds them, unacknowledged, past their lock; m1
     * then consumes the topic and must get them all, those with a raised count. */
    static void expire(String bootstrap, String topic, String group, int total, long deadline)
            throws InterruptedException {
        try (KafkaShareConsumer<byte[], byte[]> holder = member(bootstrap, group, "m0", Map.of())) {
            holder.subscribe(List.of(topic));
            ConsumerRecords<byte[], byte[]> held = ConsumerRecords.empty();
            while (held.isEmpty() && System.currentTimeMillis() < deadline) {
                held = holder.poll(Duration.ofMillis(200));
            }
            say("lock m0 " + holder.acquisitionLockTimeoutMs().map(String::valueOf).orElse("?"));
            for (ConsumerRecord<byte[], byte[]> record : held) {
                report("m0", record, "HELD");
            }
            Set<Long> seen = ConcurrentHashMap.newKeySet();
            Thread taker = new Thread(
                    () -> run(bootstrap, topic, group, "m1", false, seen, total, deadline, Map.of()));
            taker.start();
            taker.join();
        }
        say("done m0");
    }

    /** m0 keeps what it gets by RENEW until HOLD_MS have passed since it got it, then
     * ACCEPTs it; m1 ACCEPTs whatever reaches it meanwhile. */
    static void renew(String bootstrap, String topic, String group, long deadline)
            throws InterruptedException {
        Set<Long> taken = ConcurrentHashMap.newKeySet();
        Map<Long, Long> since = new ConcurrentHashMap<>();
        Set<Long> accepted = ConcurrentHashMap.newKeySet();
        AtomicBoolean refused = new AtomicBoolean(false);
        Thread other = new Thread(() -> {
            try (KafkaShareConsumer<byte[], byte[]> consumer = member(bootstrap, group, "m1", Map.of())) {
                consumer.subscribe(List.of(topic));
                while (System.currentTimeMillis() < deadline && !refused.get()
                        && (since.isEmpty() || accepted.size() < since.size())) {
                    for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                        consumer.acknowledge(record, AcknowledgeType.ACCEPT);
                        report("m1", record, "ACCEPT");
                    }
                    consumer.commitSync().forEach((tp, e) -> e.ifPresent(x -> say("e m1 " + x)));
                }
            }
            say("done m1");
        });
        try (KafkaShareConsumer<byte[], byte[]> consumer = member(bootstrap, group, "m0", Map.of())) {
            consumer.subscribe(List.of(topic));
            while (System.currentTimeMillis() < deadline && !refused.get()
                    && (since.isEmpty() || accepted.size() < since.size())) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    long now = System.currentTimeMillis();
                    since.putIfAbsent(record.offset(), now);
                    boolean keep = now - since.get(record.offset()) < HOLD_MS;
                    AcknowledgeType ack = keep ? AcknowledgeType.RENEW : AcknowledgeType.ACCEPT;
                    consumer.acknowledge(record, ack);
                    if (!keep) {
                        accepted.add(record.offset());
                    }
                    report("m0", record, ack.name());
                }
                consumer.commitSync().forEach((tp, e) -> e.ifPresent(x -> {
                    say("e m0 " + x);
                    refused.set(true);  // a refused RENEW ends the scenario
                }));
                if (!since.isEmpty() && !other.isAlive() && taken.add(-1L)) {
                    other.start();
                }
                Thread.sleep(400);
            }
        }
        say("done m0");
        other.join();
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
            run(bootstrap, topic, group, "m0", true, seen, total, deadline, Map.of());
            return;
        }
        if (scenario.equals("limit")) {
            Map<String, String> limited = Map.of(
                    "share.acquire.mode", "record_limit", "max.poll.records", "7");
            run(bootstrap, topic, group, "m0", false, seen, total, deadline, limited);
            return;
        }
        if (scenario.equals("renew")) {
            renew(bootstrap, topic, group, deadline);
            return;
        }
        if (scenario.equals("expire")) {
            expire(bootstrap, topic, group, total, deadline);
            return;
        }
        Thread[] members = new Thread[2];
        for (int i = 0; i < members.length; i++) {
            String name = "m" + i;
            members[i] = new Thread(
                    () -> run(bootstrap, topic, group, name, false, seen, total, deadline, Map.of()));
            members[i].start();
        }
        for (Thread member : members) {
            member.join();
        }
    }
}
