package kcodec.oracle;

import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.Readable;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.util.Base64;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.function.Function;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

import static kcodec.oracle.Oracle.NODES;

/**
 * Kafka's generated message classes (org.apache.kafka.common.message.*): what exists at which versions, Kafka's
 * JSON (the generated *JsonConverter) to bytes, and bytes back to Kafka's JSON and Kafka's re-encoding.
 */
final class Messages {
    private static final String PACKAGE = "org.apache.kafka.common.message.";
    private static final Map<String, Kind> KINDS = new HashMap<>();

    private Messages() {
    }

    static void register(Map<String, Function<JsonNode, JsonNode>> commands) {
        commands.put("catalog", Messages::catalog);
        commands.put("encode", request -> Oracle.eachCase(request, Messages::encode));
        commands.put("read", request -> Oracle.eachCase(request, Messages::read));
    }

    static String kafkaVersion() {
        try (InputStream in = Message.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version");
        } catch (IOException | NullPointerException e) {
            return "unknown";
        }
    }

    /** Every API of ApiMessageType with its versions and header versions, and the versions of the message
     *  classes named in "classes" (null for a class this line lacks). */
    private static JsonNode catalog(JsonNode request) {
        ObjectNode answer = NODES.objectNode().put("kafka", kafkaVersion());
        ArrayNode apis = answer.putArray("apis");
        for (ApiMessageType t : ApiMessageType.values()) {
            ObjectNode api = apis.addObject().put("key", t.apiKey()).put("name", t.name());
            try {
                api.put("lowest", t.lowestSupportedVersion())
                    .put("highest", t.highestSupportedVersion(true))
                    .put("highest_stable", t.highestSupportedVersion(false))
                    .put("request", t.newRequest().getClass().getSimpleName())
                    .put("response", t.newResponse().getClass().getSimpleName());
                ArrayNode requestHeaders = api.putArray("request_header");
                ArrayNode responseHeaders = api.putArray("response_header");
                for (short v = t.lowestSupportedVersion(); v <= t.highestSupportedVersion(true); v++) {
                    requestHeaders.add(t.requestHeaderVersion(v));
                    responseHeaders.add(t.responseHeaderVersion(v));
                }
            } catch (RuntimeException e) {  // Kafka 4.x keeps some removed APIs' keys, with no versions
                api.put("error", e.getClass().getName() + ": " + e.getMessage());
            }
        }
        answer.set("schemas", schemas());
        ObjectNode classes = answer.putObject("classes");
        for (JsonNode name : request.path("classes")) {
            try {
                Message m = kind(name.asText()).constructor.newInstance();
                classes.putObject(name.asText())
                    .put("lowest", m.lowestSupportedVersion())
                    .put("highest", m.highestSupportedVersion());
            } catch (ReflectiveOperationException | Oracle.OracleException e) {
                classes.putNull(name.asText());
            }
        }
        return answer;
    }

    /** Every message schema in Kafka's jar (common/message/*.json): its name, type, api key, and the versions
     *  of its generated class. */
    private static ArrayNode schemas() {
        ArrayNode out = NODES.arrayNode();
        JsonMapper commented = JsonMapper.builder().enable(JsonReadFeature.ALLOW_JAVA_COMMENTS).build();
        try (JarFile jar = new JarFile(new File(Message.class.getProtectionDomain().getCodeSource().getLocation().toURI()))) {
            for (JarEntry e : Collections.list(jar.entries())) {
                if (!e.getName().startsWith("common/message/") || !e.getName().endsWith(".json")) {
                    continue;
                }
                JsonNode schema;
                try (InputStream in = jar.getInputStream(e)) {
                    schema = commented.readTree(in);
                }
                String name = schema.path("name").asText();
                String type = schema.path("type").asText();
                boolean api = type.equals("request") || type.equals("response") || type.equals("header");
                ObjectNode s = out.addObject().put("name", name).put("type", type)
                    .put("valid", schema.path("validVersions").asText());
                if (schema.has("apiKey")) {
                    s.put("api_key", schema.path("apiKey").asInt());
                }
                String cls = api ? name + "Data" : name;
                try {
                    Message m = kind(cls).constructor.newInstance();
                    s.put("class", cls).put("lowest", m.lowestSupportedVersion()).put("highest", m.highestSupportedVersion());
                } catch (ReflectiveOperationException | Oracle.OracleException | ClassCastException x) {
                    s.put("class_error", x.toString());  // a schema without a generated Message (e.g. a coordinator's)
                }
            }
        } catch (IOException | URISyntaxException e) {
            throw new Oracle.OracleException(e);
        }
        return out;
    }

    /** {"cls", "v", "json"}: the message Kafka's JsonConverter reads from the JSON, written at v. */
    private static JsonNode encode(JsonNode c) {
        Kind kind = kind(c.path("cls").asText());
        short v = version(kind, c);
        Message m = (Message) invoke(kind.fromJson, c.path("json"), v);
        return NODES.objectNode().put("bytes", Base64.getEncoder().encodeToString(serialize(m, v)));
    }

    /** {"cls", "v", "bytes"}: what Kafka reads there, as Kafka's JSON, its re-encoding and the bytes it left. */
    private static JsonNode read(JsonNode c) {
        Kind kind = kind(c.path("cls").asText());
        short v = version(kind, c);
        ByteBuffer buf = ByteBuffer.wrap(Base64.getDecoder().decode(c.path("bytes").asText()));
        Message m;
        try {
            m = kind.reader.newInstance(new ByteBufferAccessor(buf), v);
        } catch (ReflectiveOperationException e) {
            throw new Oracle.OracleException(e);
        }
        ObjectNode result = NODES.objectNode();
        result.set("json", (JsonNode) invoke(kind.toJson, m, v));
        result.put("left", buf.remaining());
        result.put("bytes", Base64.getEncoder().encodeToString(serialize(m, v)));
        return result;
    }

    private static short version(Kind kind, JsonNode c) {
        short v = (short) c.path("v").asInt();
        Message m;
        try {
            m = kind.constructor.newInstance();
        } catch (ReflectiveOperationException e) {
            throw new Oracle.OracleException(e);
        }
        if (v < m.lowestSupportedVersion() || v > m.highestSupportedVersion()) {
            throw new IllegalArgumentException(kind.name + " has versions " + m.lowestSupportedVersion() + "-"
                + m.highestSupportedVersion() + " in Kafka " + kafkaVersion() + ", not " + v);
        }
        return v;
    }

    /** Kafka's own two passes: size (filling the cache), then write into a buffer of exactly that size. */
    static byte[] serialize(Message m, short v) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = m.size(cache, v);
        ByteBuffer buf = ByteBuffer.allocate(size);
        m.write(new ByteBufferAccessor(buf), cache, v);
        if (buf.hasRemaining()) {
            throw new IllegalStateException("size() said " + size + " bytes, write() wrote " + buf.position());
        }
        return buf.array();
    }

    private static Object invoke(Method method, Object arg, short v) {
        try {
            return method.invoke(null, arg, v);
        } catch (ReflectiveOperationException e) {
            throw new Oracle.OracleException(e);
        }
    }

    private static Kind kind(String name) {
        return KINDS.computeIfAbsent(name, Kind::new);
    }

    /** A message class and its converter's methods, looked up once. */
    private static final class Kind {
        final String name;
        final Constructor<? extends Message> constructor;
        final Constructor<? extends Message> reader;
        final Method fromJson;
        final Method toJson;

        Kind(String name) {
            this.name = name;
            try {
                Class<? extends Message> cls = Class.forName(PACKAGE + name).asSubclass(Message.class);
                Class<?> converter = Class.forName(PACKAGE + name + "JsonConverter");
                constructor = cls.getConstructor();
                reader = cls.getConstructor(Readable.class, short.class);
                fromJson = converter.getMethod("read", JsonNode.class, short.class);
                toJson = converter.getMethod("write", cls, short.class);
            } catch (ReflectiveOperationException e) {
                throw new Oracle.OracleException(e);
            }
        }
    }
}
