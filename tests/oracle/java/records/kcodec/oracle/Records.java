package kcodec.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.message.KRaftVersionRecordJsonConverter;
import org.apache.kafka.common.message.LeaderChangeMessageJsonConverter;
import org.apache.kafka.common.message.SnapshotFooterRecordJsonConverter;
import org.apache.kafka.common.message.SnapshotHeaderRecordJsonConverter;
import org.apache.kafka.common.message.VotersRecordJsonConverter;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.Base64;
import java.util.Map;
import java.util.function.Function;

import static kcodec.oracle.Oracle.NODES;

/**
 * Kafka 4.4's record classes: batches built by MemoryRecordsBuilder (magic 0, 1, 2; every codec; control and
 * transactional batches; headers; timestamps) and read back by MemoryRecords.
 */
public final class Records {
    private Records() {
    }

    public static void register(Map<String, Function<JsonNode, JsonNode>> commands) {
        commands.put("records_build", request -> Oracle.eachCase(request, Records::build));
        commands.put("records_read", request -> Oracle.eachCase(request, Records::read));
    }

    /** {"batches": [spec, ...]}: the batches MemoryRecordsBuilder writes, one after the other. */
    private static JsonNode build(JsonNode c) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (JsonNode spec : c.path("batches")) {
            ByteBuffer batch = batch(spec);
            out.write(batch.array(), batch.arrayOffset() + batch.position(), batch.remaining());
        }
        return NODES.objectNode().put("bytes", Base64.getEncoder().encodeToString(out.toByteArray()));
    }

    private static ByteBuffer batch(JsonNode spec) {
        byte magic = (byte) spec.path("magic").asInt(2);
        MemoryRecordsBuilder b = new MemoryRecordsBuilder(ByteBuffer.allocate(256), magic,
            compression(spec.path("compression").asText("none"), spec.path("level")),
            TimestampType.forName(spec.path("timestamp_type").asText("CreateTime")),
            spec.path("base_offset").asLong(0), spec.path("log_append_time").asLong(-1),
            spec.path("producer_id").asLong(-1), (short) spec.path("producer_epoch").asInt(-1),
            spec.path("base_sequence").asInt(-1), spec.path("transactional").asBoolean(false),
            spec.path("control").asBoolean(false), spec.path("partition_leader_epoch").asInt(-1),
            Integer.MAX_VALUE);
        for (JsonNode r : spec.path("records")) {
            long ts = r.path("timestamp").asLong(-1);
            if (r.has("marker")) {
                ControlRecordType type = r.path("marker").asText().equals("COMMIT")
                    ? ControlRecordType.COMMIT : ControlRecordType.ABORT;
                b.appendEndTxnMarker(ts, new EndTransactionMarker(type, r.path("coordinator_epoch").asInt()));
            } else if (r.has("kraft")) {
                appendKraft(b, ts, r.path("kraft").asText(), r.path("json"), (short) r.path("v").asInt());
            } else if (r.has("offset")) {
                b.appendWithOffset(r.path("offset").asLong(), ts, bytes(r.path("key")), bytes(r.path("value")),
                    headers(r.path("headers")));
            } else {
                b.append(ts, bytes(r.path("key")), bytes(r.path("value")), headers(r.path("headers")));
            }
        }
        return b.build().buffer();
    }

    /** KRaft's control records, each given as its message's Kafka JSON at version v. */
    private static void appendKraft(MemoryRecordsBuilder b, long ts, String kind, JsonNode json, short v) {
        switch (kind) {
            case "LEADER_CHANGE" -> b.appendLeaderChangeMessage(ts, LeaderChangeMessageJsonConverter.read(json, v));
            case "SNAPSHOT_HEADER" -> b.appendSnapshotHeaderMessage(ts, SnapshotHeaderRecordJsonConverter.read(json, v));
            case "SNAPSHOT_FOOTER" -> b.appendSnapshotFooterMessage(ts, SnapshotFooterRecordJsonConverter.read(json, v));
            case "KRAFT_VERSION" -> b.appendKRaftVersionMessage(ts, KRaftVersionRecordJsonConverter.read(json, v));
            case "KRAFT_VOTERS" -> b.appendVotersMessage(ts, VotersRecordJsonConverter.read(json, v));
            default -> throw new IllegalArgumentException("no KRaft control record " + kind);
        }
    }

    private static Compression compression(String name, JsonNode level) {
        if (level.isMissingNode() || level.isNull()) {
            return Compression.of(name).build();
        }
        return switch (name) {
            case "gzip" -> Compression.gzip().level(level.asInt()).build();
            case "lz4" -> Compression.lz4().level(level.asInt()).build();
            case "zstd" -> Compression.zstd().level(level.asInt()).build();
            default -> throw new IllegalArgumentException(name + " takes no level");
        };
    }

    private static byte[] bytes(JsonNode node) {
        return node.isNull() || node.isMissingNode() ? null : Base64.getDecoder().decode(node.asText());
    }

    private static Header[] headers(JsonNode list) {
        Header[] headers = new Header[list.size()];
        for (int i = 0; i < headers.length; i++) {
            headers[i] = new RecordHeader(list.get(i).get(0).asText(), bytes(list.get(i).get(1)));
        }
        return headers;
    }

    /** {"bytes"}: every batch MemoryRecords finds there, its CRC checked, with every record. */
    private static JsonNode read(JsonNode c) {
        MemoryRecords records = MemoryRecords.readableRecords(
            ByteBuffer.wrap(Base64.getDecoder().decode(c.path("bytes").asText())));
        ObjectNode result = NODES.objectNode().put("valid_bytes", records.validBytes());
        ArrayNode batches = result.putArray("batches");
        for (MutableRecordBatch batch : records.batches()) {
            batch.ensureValid();
            ObjectNode b = batches.addObject()
                .put("magic", batch.magic())
                .put("base_offset", batch.baseOffset())
                .put("last_offset", batch.lastOffset())
                .put("size", batch.sizeInBytes())
                .put("compression", batch.compressionType().name)
                .put("timestamp_type", batch.timestampType().name)
                .put("max_timestamp", batch.maxTimestamp())
                .put("producer_id", batch.producerId())
                .put("producer_epoch", batch.producerEpoch())
                .put("base_sequence", batch.baseSequence())
                .put("partition_leader_epoch", batch.partitionLeaderEpoch())
                .put("transactional", batch.isTransactional())
                .put("control", batch.isControlBatch())
                .put("checksum", batch.checksum());
            ArrayNode out = b.putArray("records");
            for (Record r : batch) {
                r.ensureValid();
                ObjectNode rec = out.addObject()
                    .put("offset", r.offset())
                    .put("timestamp", r.timestamp())
                    .put("sequence", r.sequence());
                rec.put("key", encoded(r.key()));
                rec.put("value", encoded(r.value()));
                ArrayNode hs = rec.putArray("headers");
                for (Header h : r.headers()) {
                    hs.addArray().add(h.key()).add(h.value() == null ? null
                        : Base64.getEncoder().encodeToString(h.value()));
                }
                if (batch.isControlBatch()) {
                    ControlRecordType type = ControlRecordType.parse(r.key());
                    rec.put("control_type", type.type());
                    if (type == ControlRecordType.COMMIT || type == ControlRecordType.ABORT) {
                        rec.put("coordinator_epoch", EndTransactionMarker.deserialize(r).coordinatorEpoch());
                    }
                }
            }
        }
        return result;
    }

    private static String encoded(ByteBuffer buf) {
        if (buf == null) {
            return null;
        }
        byte[] b = new byte[buf.remaining()];
        buf.duplicate().get(b);
        return Base64.getEncoder().encodeToString(b);
    }
}
