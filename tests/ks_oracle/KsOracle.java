import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.SessionWindowedDeserializer;
import org.apache.kafka.streams.kstream.TimeWindowedDeserializer;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.test.TestRecord;

/**
 * The Kafka Streams side of the differential suite: one JVM runs every case of a batch.
 *
 * <p>Arguments: the batch file, the results file, and a folder for the stores' state.
 *
 * <p>Reads a JSON file {@code {"cases": [{"name", "topology", "sources": {topic: kind},
 * "sinks": {topic: [keyKind, valueKind]}, "records": [[topic, key, value, ts], ...]}]}},
 * builds each case's topology ({@link KsTopologies}), pipes its records in order into Kafka
 * Streams' own TopologyTestDriver (record cache off, so every update is emitted) and writes
 * {@code {name: {"outputs": {topic: [[key, value, ts], ...]}}}} or {@code {name: {"error":
 * ...}}}. Kinds: "S" string, "L" long; key kinds add "W<size>" (time-windowed string key)
 * and "SW" (session-windowed string key), rendered as {@code key@start/end}.
 */
public final class KsOracle {
  private static final ObjectMapper JSON = new ObjectMapper();

  private KsOracle() {}

  public static void main(String[] args) throws Exception {
    JsonNode batch = JSON.readTree(new File(args[0]));
    ObjectNode results = JSON.createObjectNode();
    Path stateRoot = Files.createTempDirectory(Path.of(args[2]), "ks-oracle-");
    int n = 0;
    for (JsonNode c : batch.get("cases")) {
      String name = c.get("name").asText();
      try {
        results.set(name, runCase(c, stateRoot.resolve("case-" + n++)));
      } catch (Exception | AssertionError e) {
        StringWriter trace = new StringWriter();
        e.printStackTrace(new PrintWriter(trace));
        results.set(name, JSON.createObjectNode().put("error", trace.toString()));
      }
    }
    JSON.writeValue(new File(args[1]), results);
  }

  private static ObjectNode runCase(JsonNode c, Path stateDir) {
    StreamsBuilder builder = new StreamsBuilder();
    KsTopologies.build(c.get("topology").asText(), builder);
    Topology topology = builder.build();
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, "oracle");
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
    props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
    props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
    // Emit-on-window-close and the outer joins' unmatched records are checked at most once
    // per this many ms of processing time, a throttle that makes when a result comes out
    // depend on the clock rather than on the records. Checked on every record, as
    // headrace does.
    props.put(StreamsConfig.InternalConfig.EMIT_INTERVAL_MS_KSTREAMS_WINDOWED_AGGREGATION, 0L);
    props.put(StreamsConfig.InternalConfig.EMIT_INTERVAL_MS_KSTREAMS_OUTER_JOIN_SPURIOUS_RESULTS_FIX, 0L);
    ObjectNode outputs = JSON.createObjectNode();
    try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(0))) {
      Map<String, TestInputTopic<String, Object>> inputs = new HashMap<>();
      Iterator<Map.Entry<String, JsonNode>> sources = c.get("sources").fields();
      while (sources.hasNext()) {
        Map.Entry<String, JsonNode> s = sources.next();
        inputs.put(
            s.getKey(),
            driver.createInputTopic(
                s.getKey(), new StringSerializer(), valueSerializer(s.getValue().asText())));
      }
      for (JsonNode r : c.get("records")) {
        String key = r.get(1).isNull() ? null : r.get(1).asText();
        JsonNode v = r.get(2);
        Object value = v.isNull() ? null : v.isNumber() ? (Object) v.asLong() : v.asText();
        inputs.get(r.get(0).asText()).pipeInput(key, value, r.get(3).asLong());
      }
      Iterator<Map.Entry<String, JsonNode>> sinks = c.get("sinks").fields();
      while (sinks.hasNext()) {
        Map.Entry<String, JsonNode> s = sinks.next();
        TestOutputTopic<Object, Object> out =
            driver.createOutputTopic(
                s.getKey(),
                keyDeserializer(s.getValue().get(0).asText()),
                valueDeserializer(s.getValue().get(1).asText()));
        ArrayNode records = outputs.putArray(s.getKey());
        for (TestRecord<Object, Object> rec : out.readRecordsToList()) {
          ArrayNode row = records.addArray();
          row.add(renderKey(rec.key()));
          Object value = rec.value();
          if (value == null) {
            row.addNull();
          } else if (value instanceof Long) {
            row.add((Long) value);
          } else {
            row.add((String) value);
          }
          row.add(rec.timestamp());
        }
      }
    }
    ObjectNode result = JSON.createObjectNode();
    result.set("outputs", outputs);
    return result;
  }

  private static String renderKey(Object key) {
    if (key instanceof Windowed) {
      Windowed<?> w = (Windowed<?>) key;
      return w.key() + "@" + w.window().start() + "/" + w.window().end();
    }
    return (String) key;
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static Serializer<Object> valueSerializer(String kind) {
    return (Serializer) (kind.equals("L") ? new LongSerializer() : new StringSerializer());
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static Deserializer<Object> valueDeserializer(String kind) {
    return (Deserializer) (kind.equals("L") ? new LongDeserializer() : new StringDeserializer());
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static Deserializer<Object> keyDeserializer(String kind) {
    if (kind.equals("SW")) {
      return (Deserializer) new SessionWindowedDeserializer<>(new StringDeserializer());
    }
    if (kind.startsWith("W")) {
      long size = Long.parseLong(kind.substring(1));
      return (Deserializer) new TimeWindowedDeserializer<>(new StringDeserializer(), size);
    }
    return (Deserializer) new StringDeserializer();
  }
}
