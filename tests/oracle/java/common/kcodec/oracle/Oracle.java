package kcodec.oracle;

import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.InvocationTargetException;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * Apache Kafka's own classes behind a framed protocol on stdin/stdout, for kcodec's tests (tests/oracle).
 *
 * <p>A request is a 4-byte big-endian length and that many bytes of JSON: {"cmd": NAME, ...}; the answer is
 * framed alike. Commands that take {"cases": [...]} answer {"results": [...]}, one per case, each either a
 * result or {"error": "..."}: one case's failure never ends the process. Binary values travel as base64
 * strings. Nothing but answers is written to stdout (System.out goes to stderr).
 */
public final class Oracle {
    static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    /** Kafka's float64 fields may hold infinities: written and read as bare Infinity / NaN. */
    static final JsonMapper JSON = JsonMapper.builder()
        .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
        .disable(JsonWriteFeature.WRITE_NAN_AS_STRINGS)
        .build();

    private Oracle() {
    }

    public static void main(String[] args) throws Exception {
        FileOutputStream stdout = new FileOutputStream(FileDescriptor.out);
        System.setOut(System.err);
        Map<String, Function<JsonNode, JsonNode>> commands = new HashMap<>();
        commands.put("ping", request -> NODES.objectNode().put("kafka", Messages.kafkaVersion()));
        Messages.register(commands);
        registerRecords(commands);
        DataInputStream in = new DataInputStream(new BufferedInputStream(System.in, 1 << 16));
        DataOutputStream out = new DataOutputStream(new BufferedOutputStream(stdout, 1 << 16));
        while (true) {
            int size;
            try {
                size = in.readInt();
            } catch (EOFException e) {
                return;
            }
            byte[] frame = new byte[size];
            in.readFully(frame);
            JsonNode answer;
            try {
                JsonNode request = JSON.readTree(frame);
                Function<JsonNode, JsonNode> command = commands.get(request.path("cmd").asText());
                answer = command == null
                    ? error("unknown command " + request.path("cmd"))
                    : command.apply(request);
            } catch (Exception e) {
                answer = error(e);
            }
            byte[] body = JSON.writeValueAsBytes(answer);
            out.writeInt(body.length);
            out.write(body);
            out.flush();
        }
    }

    /** The record commands are compiled against Kafka 4.4 only (its record classes moved package). */
    @SuppressWarnings("unchecked")
    private static void registerRecords(Map<String, Function<JsonNode, JsonNode>> commands) throws Exception {
        try {
            Class.forName("kcodec.oracle.Records").getMethod("register", Map.class).invoke(null, commands);
        } catch (ClassNotFoundException e) {
            // this line's module has no record commands
        }
    }

    /** Every case of a batch through one function: a result, or {"error": ...} for that case alone. */
    static JsonNode eachCase(JsonNode request, Function<JsonNode, JsonNode> one) {
        ArrayNode results = NODES.arrayNode();
        for (JsonNode c : request.path("cases")) {
            JsonNode result;
            try {
                result = one.apply(c);
            } catch (Exception | Error e) {
                result = error(e);
            }
            results.add(result);
        }
        ObjectNode answer = NODES.objectNode();
        answer.set("results", results);
        return answer;
    }

    static ObjectNode error(String message) {
        return NODES.objectNode().put("error", message);
    }

    static ObjectNode error(Throwable e) {
        while ((e instanceof InvocationTargetException || e instanceof RuntimeException && e.getMessage() == null
                || e instanceof OracleException) && e.getCause() != null) {
            e = e.getCause();
        }
        ObjectNode node = error(e.getClass().getName() + ": " + e.getMessage());
        if (e instanceof NullPointerException || e instanceof ClassCastException) {
            StringWriter trace = new StringWriter();
            e.printStackTrace(new PrintWriter(trace));
            node.put("trace", trace.toString());
        }
        return node;
    }

    /** A checked failure (reflection) carried out of a lambda. */
    static final class OracleException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        OracleException(Throwable cause) {
            super(cause.getMessage(), cause);
        }
    }
}
