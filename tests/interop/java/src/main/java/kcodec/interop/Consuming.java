package kcodec.interop;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;

/** Kafka's consumer: groups (classic and KIP-848's consumer protocol), rebalances, seek, commits. */
final class Consuming {
    private Consuming() {}

    static void register(Map<String, Driver.Op> ops) {
        ops.put("group", Consuming::group);
        ops.put("seek", Consuming::seek);
        ops.put("commit", Consuming::commit);
    }

    /** Sends ``count`` records k{i}/v{i} round robin over ``partitions`` partitions, at timestamps base + 1000 i. */
    static void fill(JsonNode a, String topic, int partitions, int from, int count, long base) throws Exception {
        try (KafkaProducer<String, String> p = Clients.producer(a, Map.of())) {
            for (int i = from; i < from + count; i++) {
                p.send(new ProducerRecord<>(topic, i % partitions, base + 1000L * i, "k" + i, "v" + i));
            }
            p.flush();
        }
    }

    /** A member's settings for group ``group`` under ``protocol`` (classic or consumer). */
    static Map<String, Object> member(String group, String protocol) {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        s.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        return s;
    }

    /** The partitions a listener saw assigned, revoked and lost, in order. */
    static final class Listener implements ConsumerRebalanceListener {
        final List<String> events = new ArrayList<>();

        private void add(String what, Collection<TopicPartition> ps) {
            if (ps.isEmpty()) return;
            TreeSet<String> names = new TreeSet<>();
            for (TopicPartition p : ps) names.add(Clients.tp(p));
            events.add(what + " " + names);
        }

        @Override public void onPartitionsAssigned(Collection<TopicPartition> ps) { add("assigned", ps); }
        @Override public void onPartitionsRevoked(Collection<TopicPartition> ps) { add("revoked", ps); }
        @Override public void onPartitionsLost(Collection<TopicPartition> ps) { add("lost", ps); }
    }

    /** Whether a member has read its partitions to ``end``. */
    static boolean caughtUp(KafkaConsumer<String, String> c, Map<TopicPartition, Long> end) {
        for (TopicPartition p : c.assignment()) {
            if (c.position(p) < end.get(p)) return false;
        }
        return true;
    }

    static TreeSet<String> names(Set<TopicPartition> ps) {
        TreeSet<String> out = new TreeSet<>();
        for (TopicPartition p : ps) out.add(Clients.tp(p));
        return out;
    }

    /**
     * args: topic, partitions, group, protocol. Member A consumes the first 40 records and commits them
     * synchronously; member B joins and the two share the partitions until each has read its own to the end
     * of 40 more (then A commits asynchronously, B synchronously); B leaves and A takes every partition back. Returns the
     * assignments at each stage, the records each read, the listeners' events and the committed offsets.
     */
    static Object group(JsonNode a) throws Exception {
        String topic = a.path("topic").asText(), group = a.path("group").asText(), protocol = a.path("protocol").asText();
        int partitions = a.path("partitions").asInt();
        List<TopicPartition> all = Clients.partitions(topic, partitions);
        Map<String, Object> out = new LinkedHashMap<>();
        fill(a, topic, partitions, 0, 40, System.currentTimeMillis());
        Listener la = new Listener(), lb = new Listener();
        try (KafkaConsumer<String, String> ca = Clients.consumer(a, member(group, protocol))) {
            ca.subscribe(List.of(topic), la);
            int readA = 0;
            long deadline = System.currentTimeMillis() + Clients.DEADLINE_MS;
            while (readA < 40 && System.currentTimeMillis() < deadline) readA += ca.poll(Clients.POLL).count();
            out.put("alone_assignment", names(ca.assignment()));
            out.put("alone_read", readA);
            ca.commitSync();
            fill(a, topic, partitions, 40, 40, System.currentTimeMillis());
            Map<TopicPartition, Long> end = ca.endOffsets(all);
            AtomicReference<String> asyncError = new AtomicReference<>("pending");
            int[] read = {0, 0};
            try (KafkaConsumer<String, String> cb = Clients.consumer(a, member(group, protocol))) {
                cb.subscribe(List.of(topic), lb);
                deadline = System.currentTimeMillis() + Clients.DEADLINE_MS;
                while (System.currentTimeMillis() < deadline) {
                    read[0] += ca.poll(Clients.POLL).count();
                    read[1] += cb.poll(Clients.POLL).count();
                    Set<TopicPartition> sa = ca.assignment(), sb = cb.assignment();
                    Set<TopicPartition> both = new HashSet<>(sa);
                    both.retainAll(sb);
                    Set<TopicPartition> union = new HashSet<>(sa);
                    union.addAll(sb);
                    if (!sa.isEmpty() && !sb.isEmpty() && both.isEmpty() && union.size() == partitions
                            && caughtUp(ca, end) && caughtUp(cb, end)) break;
                }
                out.put("shared_assignment", List.of(names(ca.assignment()), names(cb.assignment())));
                out.put("shared_read", List.of(read[0], read[1]));
                ca.commitAsync((offsets, e) -> asyncError.set(e == null ? null : Clients.describe(e)));
                cb.commitSync();
                while (asyncError.get() != null && "pending".equals(asyncError.get())
                        && System.currentTimeMillis() < deadline) {
                    ca.poll(Clients.POLL);  // commitAsync's callback runs inside poll
                }
                out.put("async_commit_error", asyncError.get());
            }
            deadline = System.currentTimeMillis() + Clients.DEADLINE_MS;
            while (ca.assignment().size() < partitions && System.currentTimeMillis() < deadline) ca.poll(Clients.POLL);
            out.put("after_leave_assignment", names(ca.assignment()));
            Map<TopicPartition, OffsetAndMetadata> committed = ca.committed(new HashSet<>(all));
            Map<String, Long> offsets = new LinkedHashMap<>();
            for (TopicPartition p : all) {
                OffsetAndMetadata m = committed.get(p);
                offsets.put(Clients.tp(p), m == null ? null : m.offset());
            }
            out.put("committed", offsets);
            out.put("group_metadata", List.of(ca.groupMetadata().groupId(), ca.groupMetadata().generationId() > 0,
                    !ca.groupMetadata().memberId().isEmpty()));
        }
        out.put("events", List.of(la.events, lb.events));
        return out;
    }

    /** args: topic. 10 records on partition 0, timestamps base + 1000 i: seek, seekToBeginning/End, offsetsForTimes. */
    static Object seek(JsonNode a) throws Exception {
        String topic = a.path("topic").asText();
        long base = 1_700_000_000_000L;
        fill(a, topic, 1, 0, 10, base);
        TopicPartition tp = new TopicPartition(topic, 0);
        Map<String, Object> out = new LinkedHashMap<>();
        try (KafkaConsumer<String, String> c = Clients.consumer(a, Map.of())) {
            c.assign(List.of(tp));
            c.seek(tp, 5);
            out.put("after_seek_5", firstOffset(c));
            c.seekToBeginning(List.of(tp));
            out.put("position_beginning", c.position(tp));
            c.seekToEnd(List.of(tp));
            out.put("position_end", c.position(tp));
            Map<TopicPartition, OffsetAndTimestamp> times = c.offsetsForTimes(Map.of(tp, base + 3500));
            OffsetAndTimestamp t = times.get(tp);
            out.put("for_time_3500", t == null ? null : List.of(t.offset(), t.timestamp() - base));
            out.put("for_time_future", c.offsetsForTimes(Map.of(tp, base + 99_000)).get(tp));
            out.put("beginning", c.beginningOffsets(List.of(tp)).get(tp));
            out.put("end", c.endOffsets(List.of(tp)).get(tp));
            c.seek(tp, 8);
            c.pause(List.of(tp));
            out.put("paused_poll", c.poll(Clients.POLL.multipliedBy(3)).count());
            c.resume(List.of(tp));
            out.put("resumed_first", firstOffset(c));
        }
        return out;
    }

    static Long firstOffset(KafkaConsumer<String, String> c) {
        long deadline = System.currentTimeMillis() + Clients.DEADLINE_MS;
        while (System.currentTimeMillis() < deadline) {
            for (ConsumerRecord<String, String> r : c.poll(Clients.POLL)) return r.offset();
        }
        return null;
    }

    /**
     * args: topic, group, protocol. 10 records on partition 0; a member reads them, commits offset 4 with
     * metadata synchronously, then offset 6 asynchronously; committed() and a new member of the group, which
     * starts where the group left off.
     */
    static Object commit(JsonNode a) throws Exception {
        String topic = a.path("topic").asText(), group = a.path("group").asText(), protocol = a.path("protocol").asText();
        fill(a, topic, 1, 0, 10, System.currentTimeMillis());
        TopicPartition tp = new TopicPartition(topic, 0);
        Map<String, Object> out = new LinkedHashMap<>();
        try (KafkaConsumer<String, String> c = Clients.consumer(a, member(group, protocol))) {
            c.subscribe(List.of(topic));
            int read = 0;
            long deadline = System.currentTimeMillis() + Clients.DEADLINE_MS;
            while (read < 10 && System.currentTimeMillis() < deadline) read += c.poll(Clients.POLL).count();
            out.put("read", read);
            c.commitSync(Map.of(tp, new OffsetAndMetadata(4, "four")));
            OffsetAndMetadata m = c.committed(Set.of(tp)).get(tp);
            out.put("committed_sync", List.of(m.offset(), m.metadata()));
            AtomicReference<String> done = new AtomicReference<>("pending");
            c.commitAsync(Map.of(tp, new OffsetAndMetadata(6, "six")), (o, e) -> done.set(e == null ? "ok" : Clients.describe(e)));
            while ("pending".equals(done.get()) && System.currentTimeMillis() < deadline) c.poll(Clients.POLL);
            out.put("async", done.get());
            m = c.committed(Set.of(tp)).get(tp);
            out.put("committed_async", List.of(m.offset(), m.metadata()));
        }
        try (KafkaConsumer<String, String> c = Clients.consumer(a, member(group, protocol))) {
            c.subscribe(List.of(topic));
            out.put("resumed_at", firstOffset(c));
        }
        return out;
    }
}
