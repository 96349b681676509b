package kcodec.interop;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;

/** Kafka's producer: every codec and acks, idempotent, transactional (and fenced). */
final class Producing {
    private Producing() {}

    static void register(Map<String, Driver.Op> ops) {
        ops.put("produce", Producing::produce);
        ops.put("transactions", Producing::transactions);
        ops.put("fenced", Producing::fenced);
    }

    /**
     * args: topic, partitions, count, acks, compression, idempotence. Sends ``count`` records (key k{i}, value
     * v{i}, header i) round robin over the partitions, then reads them all back from the beginning.
     */
    static Object produce(JsonNode a) throws Exception {
        String topic = a.path("topic").asText();
        int partitions = a.path("partitions").asInt(1), count = a.path("count").asInt(100);
        Map<String, Object> settings = new LinkedHashMap<>();
        settings.put(ProducerConfig.ACKS_CONFIG, a.path("acks").asText("all"));
        settings.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, a.path("compression").asText("none"));
        settings.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, a.path("idempotence").asText("false"));
        List<Object> sent = new ArrayList<>();
        try (KafkaProducer<String, String> p = Clients.producer(a, settings)) {
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                ProducerRecord<String, String> r = new ProducerRecord<>(topic, i % partitions, "k" + i, "v" + i);
                r.headers().add("i", Integer.toString(i).getBytes(StandardCharsets.UTF_8));
                futures.add(p.send(r));
            }
            p.flush();
            for (Future<RecordMetadata> f : futures) {
                RecordMetadata m = f.get();
                sent.add(List.of(m.partition(), m.offset()));
            }
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("sent", sent);
        try (KafkaConsumer<String, String> c = Clients.consumer(a, Map.of())) {
            out.put("records", Clients.readAll(c, Clients.partitions(topic, partitions), count));
        }
        return out;
    }

    /**
     * args: topic, group, transactional_id. Three transactions on partition 0 of ``topic``: c1 c2 committed,
     * a1 aborted, c3 committed with the group's offset (7 on partition 0) sent to the transaction; then what
     * read_committed and read_uncommitted consumers see, and the group's committed offset.
     */
    static Object transactions(JsonNode a) throws Exception {
        String topic = a.path("topic").asText(), group = a.path("group").asText();
        TopicPartition tp = new TopicPartition(topic, 0);
        Map<String, Object> settings = Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, a.path("transactional_id").asText());
        try (KafkaProducer<String, String> p = Clients.producer(a, settings)) {
            p.initTransactions();
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, "k", "c1"));
            p.send(new ProducerRecord<>(topic, 0, "k", "c2"));
            p.commitTransaction();
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, "k", "a1"));
            p.flush();
            p.abortTransaction();
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, "k", "c3"));
            p.sendOffsetsToTransaction(Map.of(tp, new OffsetAndMetadata(7, "txn")), new ConsumerGroupMetadata(group));
            p.commitTransaction();
        }
        Map<String, Object> out = new LinkedHashMap<>();
        for (String level : List.of("read_committed", "read_uncommitted")) {
            try (KafkaConsumer<String, String> c = Clients.consumer(a, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, level))) {
                List<String> values = new ArrayList<>();
                for (Map<String, Object> r : Clients.readAll(c, List.of(tp), level.equals("read_committed") ? 3 : 4)) {
                    values.add((String) r.get("value"));
                }
                out.put(level, values);
                out.put(level + "_end", c.endOffsets(List.of(tp)).get(tp));
            }
        }
        try (KafkaConsumer<String, String> c = Clients.consumer(a, Map.of(ConsumerConfig.GROUP_ID_CONFIG, group))) {
            OffsetAndMetadata committed = c.committed(java.util.Set.of(tp)).get(tp);
            out.put("committed", committed == null ? null : List.of(committed.offset(), committed.metadata()));
        }
        return out;
    }

    /** args: topic, transactional_id: a second producer with the same id fences the first one. */
    static Object fenced(JsonNode a) throws Exception {
        String topic = a.path("topic").asText();
        Map<String, Object> settings = Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, a.path("transactional_id").asText());
        Map<String, Object> out = new LinkedHashMap<>();
        try (KafkaProducer<String, String> first = Clients.producer(a, settings);
             KafkaProducer<String, String> second = Clients.producer(a, settings)) {
            first.initTransactions();
            first.beginTransaction();
            first.send(new ProducerRecord<>(topic, 0, "k", "first")).get();
            second.initTransactions();  // bumps the epoch: the first one's open transaction is aborted
            out.put("first_commit", Clients.attempt(() -> {
                first.commitTransaction();
                return null;
            }));
            second.beginTransaction();
            second.send(new ProducerRecord<>(topic, 0, "k", "second"));
            second.commitTransaction();
        }
        try (KafkaConsumer<String, String> c = Clients.consumer(a, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))) {
            List<String> values = new ArrayList<>();
            for (Map<String, Object> r : Clients.readAll(c, List.of(new TopicPartition(topic, 0)), 1)) {
                values.add((String) r.get("value"));
            }
            out.put("read_committed", values);
        }
        return out;
    }
}
