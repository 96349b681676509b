package kcodec.interop;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/** What the scenarios share: client settings from the request, records as JSON, errors by class name. */
final class Clients {
    static final Duration POLL = Duration.ofMillis(100);
    static final long DEADLINE_MS = 30_000;

    private Clients() {}

    /** Settings for a client: bootstrap.servers from args.bootstrap, then args.config (strings) over ``base``. */
    static Properties props(JsonNode args, Map<String, Object> base) {
        Properties p = new Properties();
        p.put("bootstrap.servers", args.path("bootstrap").asText());
        p.putAll(base);
        Iterator<Map.Entry<String, JsonNode>> extra = args.path("config").fields();
        while (extra.hasNext()) {
            Map.Entry<String, JsonNode> e = extra.next();
            p.put(e.getKey(), e.getValue().asText());
        }
        return p;
    }

    static KafkaProducer<String, String> producer(JsonNode args, Map<String, Object> settings) {
        Map<String, Object> base = new LinkedHashMap<>();
        base.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        base.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        base.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        base.putAll(settings);
        return new KafkaProducer<>(props(args, base));
    }

    static KafkaConsumer<String, String> consumer(JsonNode args, Map<String, Object> settings) {
        Map<String, Object> base = new LinkedHashMap<>();
        base.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        base.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        base.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        base.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        base.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "100");
        base.putAll(settings);
        return new KafkaConsumer<>(props(args, base));
    }

    static Map<String, Object> record(ConsumerRecord<String, String> r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("partition", r.partition());
        m.put("offset", r.offset());
        m.put("key", r.key());
        m.put("value", r.value());
        m.put("timestamp", r.timestamp());
        m.put("timestamp_type", r.timestampType().name);
        m.put("leader_epoch", r.leaderEpoch().orElse(-1));
        Map<String, String> headers = new LinkedHashMap<>();
        for (Header h : r.headers()) headers.put(h.key(), h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8));
        m.put("headers", headers);
        return m;
    }

    /** Every record of ``partitions`` from the beginning, polled until ``count`` arrived or 30 s passed. */
    static List<Map<String, Object>> readAll(KafkaConsumer<String, String> c, Collection<TopicPartition> partitions, int count) {
        c.assign(partitions);
        c.seekToBeginning(partitions);
        List<Map<String, Object>> out = new ArrayList<>();
        long deadline = System.currentTimeMillis() + DEADLINE_MS;
        while (out.size() < count && System.currentTimeMillis() < deadline) {
            for (ConsumerRecord<String, String> r : c.poll(POLL)) out.add(record(r));
        }
        return out;
    }

    static List<TopicPartition> partitions(String topic, int n) {
        List<TopicPartition> out = new ArrayList<>();
        for (int i = 0; i < n; i++) out.add(new TopicPartition(topic, i));
        return out;
    }

    static String tp(TopicPartition p) {
        return p.topic() + "-" + p.partition();
    }

    /** "Class: message" of the cause that matters (futures wrap it). */
    static String describe(Throwable t) {
        while ((t instanceof ExecutionException || t instanceof CompletionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t.getClass().getSimpleName() + ": " + t.getMessage();
    }

    interface Call {
        Object call() throws Exception;
    }

    /** {"ok": what ``c`` returned} or {"error": the failure's class}: for the errors a scenario expects. */
    static Map<String, Object> attempt(Call c) {
        Map<String, Object> m = new LinkedHashMap<>();
        try {
            m.put("ok", c.call());
        } catch (Exception e) {
            Throwable t = e;
            while ((t instanceof ExecutionException || t instanceof CompletionException) && t.getCause() != null) {
                t = t.getCause();
            }
            m.put("error", t.getClass().getSimpleName());
            m.put("message", t.getMessage());
        }
        return m;
    }
}
