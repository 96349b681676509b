package kcodec.interop;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/** Kafka's admin client: topics, configs, partitions, ACLs, groups, offsets, transactions, the cluster. */
final class Administering {
    private Administering() {}

    static void register(Map<String, Driver.Op> ops) {
        ops.put("admin_topics", Administering::topics);
        ops.put("admin_acls", Administering::acls);
        ops.put("admin_groups", Administering::groups);
        ops.put("admin_transactions", Administering::transactions);
        ops.put("admin_cluster", Administering::cluster);
        ops.put("create_topics", Administering::createTopics);
    }

    /**
     * args: topics {name: [partitions, replication factor]}. Creates them and waits until every partition
     * has a leader that serves it (a real Kafka's brokers learn new topics from the metadata log a moment
     * later; an acks=0 record sent before would be lost without a word).
     */
    static Object createTopics(JsonNode a) throws Exception {
        List<NewTopic> topics = new ArrayList<>();
        a.path("topics").fields().forEachRemaining(e -> topics.add(
                new NewTopic(e.getKey(), e.getValue().get(0).asInt(), (short) e.getValue().get(1).asInt())));
        try (Admin admin = admin(a)) {
            admin.createTopics(topics).all().get();
            List<String> names = new ArrayList<>();
            for (NewTopic t : topics) names.add(t.name());
            long deadline = System.currentTimeMillis() + Clients.DEADLINE_MS;
            while (true) {
                try {
                    boolean led = true;
                    Map<TopicPartition, OffsetSpec> ends = new LinkedHashMap<>();
                    for (TopicDescription d : admin.describeTopics(names).allTopicNames().get().values()) {
                        for (TopicPartitionInfo p : d.partitions()) {
                            led &= p.leader() != null;
                            ends.put(new TopicPartition(d.name(), p.partition()), OffsetSpec.latest());
                        }
                    }
                    if (led) {
                        admin.listOffsets(ends).all().get();  // the leaders serve them
                        return names;
                    }
                } catch (Exception e) {
                    if (System.currentTimeMillis() > deadline) throw e;
                }
                if (System.currentTimeMillis() > deadline) throw new IllegalStateException("no leaders for " + names);
                Thread.sleep(50);
            }
        }
    }

    static Admin admin(JsonNode a) {
        return Admin.create(Clients.props(a, Map.of("request.timeout.ms", "15000", "default.api.timeout.ms", "30000")));
    }

    static List<Object> describe(TopicDescription d) {
        List<Object> parts = new ArrayList<>();
        for (TopicPartitionInfo p : d.partitions()) {
            parts.add(List.of(p.partition(), p.leader() == null ? -1 : p.leader().id(), ids(p.replicas()), ids(p.isr())));
        }
        return List.of(d.name(), d.isInternal(), parts);
    }

    static List<Integer> ids(Collection<Node> nodes) {
        List<Integer> out = new ArrayList<>();
        for (Node n : nodes) out.add(n.id());
        return out;
    }

    /** args: prefix. Create (explicit, defaults, with configs), list, describe, configs, partitions, errors, delete. */
    static Object topics(JsonNode a) throws Exception {
        String x = a.path("prefix").asText();
        Map<String, Object> out = new LinkedHashMap<>();
        try (Admin admin = admin(a)) {
            // a group coordinator lookup: Kafka creates __consumer_offsets on the first (kcodec has it from the start)
            admin.listConsumerGroupOffsets(x + "nobody").partitionsToOffsetAndMetadata().get();
            NewTopic explicit = new NewTopic(x + "explicit", 3, (short) 1).configs(Map.of("retention.ms", "3600000"));
            NewTopic defaults = new NewTopic(x + "defaults", Optional.empty(), Optional.empty());
            CreateTopicsResult created = admin.createTopics(List.of(explicit, defaults));
            created.all().get();
            out.put("created", List.of(created.numPartitions(x + "explicit").get(), created.replicationFactor(x + "explicit").get(),
                    created.numPartitions(x + "defaults").get(), created.replicationFactor(x + "defaults").get()));
            out.put("created_config", created.config(x + "explicit").get().get("retention.ms").value());
            out.put("exists", Clients.attempt(() -> admin.createTopics(List.of(new NewTopic(x + "explicit", 1, (short) 1))).all().get()));
            out.put("bad_replication", Clients.attempt(() -> admin.createTopics(List.of(new NewTopic(x + "bad", 1, (short) 9))).all().get()));
            out.put("bad_partitions", Clients.attempt(() -> admin.createTopics(List.of(new NewTopic(x + "bad", 0, (short) 1))).all().get()));
            out.put("validate_only", Clients.attempt(() -> admin.createTopics(List.of(new NewTopic(x + "dry", 2, (short) 1)),
                    new org.apache.kafka.clients.admin.CreateTopicsOptions().validateOnly(true)).all().get()));
            Set<String> listed = admin.listTopics().names().get();
            Set<String> listedInternal = admin.listTopics(new org.apache.kafka.clients.admin.ListTopicsOptions().listInternal(true)).names().get();
            out.put("listed", new TreeSet<>(listed));
            out.put("internal_listed", listedInternal.contains("__consumer_offsets"));
            out.put("described", describe(admin.describeTopics(List.of(x + "explicit")).allTopicNames().get().get(x + "explicit")));
            out.put("describe_missing", Clients.attempt(() -> admin.describeTopics(List.of(x + "missing")).allTopicNames().get()));
            admin.createPartitions(Map.of(x + "explicit", NewPartitions.increaseTo(5))).all().get();
            out.put("after_create_partitions", admin.describeTopics(List.of(x + "explicit")).allTopicNames().get().get(x + "explicit").partitions().size());
            out.put("decrease_partitions", Clients.attempt(() -> admin.createPartitions(Map.of(x + "explicit", NewPartitions.increaseTo(2))).all().get()));
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, x + "explicit");
            admin.incrementalAlterConfigs(Map.of(res, List.of(
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("retention.ms", ""), AlterConfigOp.OpType.DELETE)))).all().get();
            // Kafka's brokers learn a topic's configs from the metadata log a moment after (kcodec: at once)
            Config config = admin.describeConfigs(List.of(res)).all().get().get(res);
            long deadline = System.currentTimeMillis() + Clients.DEADLINE_MS;
            while (!"compact".equals(config.get("cleanup.policy").value()) && System.currentTimeMillis() < deadline) {
                Thread.sleep(50);
                config = admin.describeConfigs(List.of(res)).all().get().get(res);
            }
            out.put("configs", List.of(entry(config.get("cleanup.policy")), entry(config.get("retention.ms"))));
            out.put("bad_config", Clients.attempt(() -> admin.incrementalAlterConfigs(Map.of(res, List.of(
                    new AlterConfigOp(new ConfigEntry("no.such.config", "1"), AlterConfigOp.OpType.SET)))).all().get()));
            ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, "1");
            Config brokerConfig = admin.describeConfigs(List.of(broker)).all().get().get(broker);
            out.put("broker_num_partitions", entry(brokerConfig.get("num.partitions")));
            admin.deleteTopics(List.of(x + "defaults")).all().get();
            out.put("delete_missing", Clients.attempt(() -> admin.deleteTopics(List.of(x + "missing")).all().get()));
            if (a.path("delete_internal").asBoolean()) {  // Kafka 4.4 deletes it: not on a shared Kafka
                out.put("delete_internal", Clients.attempt(() -> admin.deleteTopics(List.of("__consumer_offsets")).all().get()));
            }
            out.put("listed_after_delete", new TreeSet<>(admin.listTopics().names().get()));
        }
        return out;
    }

    static List<Object> entry(ConfigEntry e) {
        return e == null ? null : List.of(e.name(), String.valueOf(e.value()), e.source().name());
    }

    /** args: prefix (of every name). Create, describe (all, by filter) and delete ACLs; an invalid binding's error. */
    static Object acls(JsonNode a) throws Exception {
        String x = a.path("prefix").asText();
        Map<String, Object> out = new LinkedHashMap<>();
        AclBinding read = new AclBinding(new ResourcePattern(ResourceType.TOPIC, x + "orders", PatternType.LITERAL),
                new AccessControlEntry("User:" + x + "alice", "*", AclOperation.READ, AclPermissionType.ALLOW));
        AclBinding prefixed = new AclBinding(new ResourcePattern(ResourceType.GROUP, x + "app-", PatternType.PREFIXED),
                new AccessControlEntry("User:" + x + "alice", "*", AclOperation.READ, AclPermissionType.ALLOW));
        AclBinding deny = new AclBinding(new ResourcePattern(ResourceType.TOPIC, x + "orders", PatternType.LITERAL),
                new AccessControlEntry("User:" + x + "bob", "*", AclOperation.WRITE, AclPermissionType.DENY));
        try (Admin admin = admin(a)) {
            admin.createAcls(List.of(read, prefixed, deny)).all().get();
            out.put("all", bindings(admin.describeAcls(AclBindingFilter.ANY).values().get()));
            AclBindingFilter orders = new AclBindingFilter(
                    new ResourcePatternFilter(ResourceType.TOPIC, x + "orders", PatternType.MATCH), AccessControlEntryFilter.ANY);
            out.put("orders", bindings(admin.describeAcls(orders).values().get()));
            AclBindingFilter bobs = new AclBindingFilter(ResourcePatternFilter.ANY,
                    new AccessControlEntryFilter("User:" + x + "bob", null, AclOperation.ANY, AclPermissionType.ANY));
            out.put("deleted", bindings(admin.deleteAcls(List.of(bobs)).all().get()));
            out.put("after_delete", bindings(admin.describeAcls(AclBindingFilter.ANY).values().get()));
            AclBinding bad = new AclBinding(new ResourcePattern(ResourceType.TOPIC, x + "x", PatternType.LITERAL),
                    new AccessControlEntry(x + "alice", "*", AclOperation.READ, AclPermissionType.ALLOW));  // no principal type
            out.put("bad_principal", Clients.attempt(() -> admin.createAcls(List.of(bad)).all().get()));
        }
        return out;
    }

    static List<String> bindings(Collection<AclBinding> acls) {
        List<String> out = new ArrayList<>();
        for (AclBinding b : acls) {
            out.add(String.join(" ", b.pattern().resourceType().name(), b.pattern().name(), b.pattern().patternType().name(),
                    b.entry().principal(), b.entry().host(), b.entry().operation().name(), b.entry().permissionType().name()));
        }
        out.sort(null);
        return out;
    }

    /**
     * args: topic, group, protocol. A member of ``group`` reads 6 records (3 partitions) and commits; the admin
     * lists and describes the group while the member is in it, then (member gone) lists, alters and deletes
     * its offsets, lists partition offsets, and deletes the group.
     */
    static Object groups(JsonNode a) throws Exception {
        String topic = a.path("topic").asText(), group = a.path("group").asText(), protocol = a.path("protocol").asText();
        Consuming.fill(a, topic, 3, 0, 6, 1_700_000_000_000L);
        Map<String, Object> out = new LinkedHashMap<>();
        TopicPartition p0 = new TopicPartition(topic, 0), p1 = new TopicPartition(topic, 1);
        try (Admin admin = admin(a)) {
            try (KafkaConsumer<String, String> c = Clients.consumer(a, Consuming.member(group, protocol))) {
                c.subscribe(List.of(topic));
                int read = 0;
                long deadline = System.currentTimeMillis() + Clients.DEADLINE_MS;
                while (read < 6 && System.currentTimeMillis() < deadline) read += c.poll(Clients.POLL).count();
                c.commitSync();
                out.put("listed", listing(admin.listGroups().all().get(), group));
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
                List<Object> members = new ArrayList<>();
                for (MemberDescription m : d.members()) {
                    members.add(List.of(m.clientId(), new TreeSet<>(Consuming.names(m.assignment().topicPartitions()))));
                }
                out.put("described", List.of(d.groupState().toString(), d.type().toString(), members,
                        d.coordinator().id() >= 0, d.isSimpleConsumerGroup()));
                out.put("delete_active", Clients.attempt(() -> admin.deleteConsumerGroups(List.of(group)).all().get()));
            }
            out.put("offsets", offsets(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()));
            admin.alterConsumerGroupOffsets(group, Map.of(p0, new OffsetAndMetadata(0, "reset"))).all().get();
            admin.deleteConsumerGroupOffsets(group, Set.of(p1)).all().get();
            out.put("offsets_altered", offsets(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()));
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> earliest = admin.listOffsets(Map.of(p0, OffsetSpec.earliest())).all().get();
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> latest = admin.listOffsets(Map.of(p0, OffsetSpec.latest())).all().get();
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> max = admin.listOffsets(Map.of(p0, OffsetSpec.maxTimestamp())).all().get();
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> at = admin.listOffsets(Map.of(p0, OffsetSpec.forTimestamp(1_700_000_001_000L))).all().get();
            out.put("list_offsets", List.of(earliest.get(p0).offset(), latest.get(p0).offset(),
                    List.of(max.get(p0).offset(), max.get(p0).timestamp()), at.get(p0).offset()));
            admin.deleteConsumerGroups(List.of(group)).all().get();
            out.put("listed_after_delete", listing(admin.listGroups().all().get(), group));
            out.put("describe_deleted", Clients.attempt(() -> admin.describeConsumerGroups(List.of(group)).all().get().get(group).groupState().toString()));
        }
        return out;
    }

    static List<Object> listing(Collection<GroupListing> groups, String group) {
        for (GroupListing g : groups) {
            if (g.groupId().equals(group)) {
                return List.of(g.groupId(), String.valueOf(g.type().orElse(null)), g.protocol(), String.valueOf(g.groupState().orElse(null)));
            }
        }
        return null;
    }

    static Map<String, Object> offsets(Map<TopicPartition, OffsetAndMetadata> offsets) {
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
            out.put(Clients.tp(e.getKey()), List.of(e.getValue().offset(), e.getValue().metadata()));
        }
        return out;
    }

    /** args: topic, transactional_id. Lists and describes a transaction while it is open, then after its commit. */
    static Object transactions(JsonNode a) throws Exception {
        String topic = a.path("topic").asText(), id = a.path("transactional_id").asText();
        TopicPartition tp = new TopicPartition(topic, 0);
        Map<String, Object> out = new LinkedHashMap<>();
        try (Admin admin = admin(a);
             KafkaProducer<String, String> p = Clients.producer(a, Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id))) {
            p.initTransactions();
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, "k", "open")).get();
            out.put("open_listed", transactionListing(admin.listTransactions().all().get(), id));
            TransactionDescription d = admin.describeTransactions(List.of(id)).all().get().get(id);
            out.put("open_described", List.of(d.state().toString(), Consuming.names(d.topicPartitions()),
                    d.producerId() >= 0, d.transactionTimeoutMs(), d.transactionStartTimeMs().isPresent()));
            List<Object> producers = new ArrayList<>();
            for (ProducerState s : admin.describeProducers(List.of(tp)).all().get().get(tp).activeProducers()) {
                producers.add(List.of(s.producerId() == d.producerId(), s.lastSequence(), s.currentTransactionStartOffset().orElse(-1L)));
            }
            out.put("producers", producers);
            p.commitTransaction();
            // Kafka writes the markers after EndTxn's answer: PrepareCommit until they are (kcodec: at once)
            List<Object> listed = transactionListing(admin.listTransactions().all().get(), id);
            out.put("just_committed", listed.get(2));
            long deadline = System.currentTimeMillis() + Clients.DEADLINE_MS;
            while (!"CompleteCommit".equals(listed.get(2)) && System.currentTimeMillis() < deadline) {
                Thread.sleep(50);
                listed = transactionListing(admin.listTransactions().all().get(), id);
            }
            out.put("committed_listed", listed);
            out.put("describe_unknown", Clients.attempt(() -> admin.describeTransactions(List.of(id + "-none")).all().get()));
        }
        return out;
    }

    static List<Object> transactionListing(Collection<TransactionListing> listings, String id) {
        for (TransactionListing l : listings) {
            if (l.transactionalId().equals(id)) return List.of(l.transactionalId(), l.producerId() >= 0, l.state().toString());
        }
        return null;
    }

    /**
     * args: prefix. describeCluster, describeFeatures, describeLogDirs of every broker; client quotas (user
     * PREFIXalice) altered and described.
     */
    static Object cluster(JsonNode a) throws Exception {
        String x = a.path("prefix").asText();
        Map<String, Object> out = new LinkedHashMap<>();
        try (Admin admin = admin(a)) {
            DescribeClusterResult c = admin.describeCluster();
            out.put("nodes", ids(c.nodes().get()));
            out.put("controller", c.controller().get().id());
            out.put("cluster_id", c.clusterId().get());
            Map<String, Object> features = new TreeMap<>();
            admin.describeFeatures().featureMetadata().get().finalizedFeatures()
                    .forEach((name, range) -> features.put(name, range.maxVersionLevel()));
            out.put("finalized_features", features);
            Map<String, Object> dirs = new TreeMap<>();
            admin.describeLogDirs(ids(c.nodes().get())).allDescriptions().get()
                    .forEach((broker, byDir) -> dirs.put(String.valueOf(broker), new TreeSet<>(byDir.keySet())));
            out.put("log_dirs", dirs);
            ClientQuotaEntity alice = new ClientQuotaEntity(Map.of(ClientQuotaEntity.USER, x + "alice"));
            admin.alterClientQuotas(List.of(new ClientQuotaAlteration(alice, List.of(
                    new ClientQuotaAlteration.Op("producer_byte_rate", 1024.0),
                    new ClientQuotaAlteration.Op("request_percentage", 12.5))))).all().get();
            // Kafka's brokers learn quotas from the metadata log a moment after the controller (kcodec: at once)
            ClientQuotaFilter filter = ClientQuotaFilter.containsOnly(List.of(
                    org.apache.kafka.common.quota.ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.USER, x + "alice")));
            Map<ClientQuotaEntity, Map<String, Double>> found = Map.of();
            long deadline = System.currentTimeMillis() + Clients.DEADLINE_MS;
            while (found.isEmpty() && System.currentTimeMillis() < deadline) {
                found = admin.describeClientQuotas(filter).entities().get();
                if (found.isEmpty()) Thread.sleep(50);
            }
            Map<String, Object> quotas = new TreeMap<>();
            found.forEach((entity, values) -> quotas.put(new TreeMap<>(entity.entries()).toString(), new TreeMap<>(values)));
            out.put("quotas", quotas);
            out.put("bad_quota", Clients.attempt(() -> admin.alterClientQuotas(List.of(new ClientQuotaAlteration(alice,
                    List.of(new ClientQuotaAlteration.Op("producer_byte_rate", 1.5))))).all().get()));
        }
        return out;
    }
}
