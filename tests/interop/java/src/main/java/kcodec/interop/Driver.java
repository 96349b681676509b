package kcodec.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One long-lived JVM that tests/interop/java_clients.py drives: each line on stdin is a JSON object
 * {"op": NAME, ...arguments}, answered by one line on stdout, {"ok": RESULT} or {"error": "Class: message"}.
 * The scenarios run Kafka's own clients (producer, consumer, admin) and return what they saw; the Python
 * tests decide what is right.
 */
public final class Driver {
    interface Op {
        Object run(JsonNode args) throws Exception;
    }

    static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] argv) throws Exception {
        Map<String, Op> ops = new LinkedHashMap<>();
        ops.put("ping", a -> "pong");
        Producing.register(ops);
        Consuming.register(ops);
        Administering.register(ops);
        // Kafka's clients print nothing on stdout (slf4j-simple logs to stderr), so stdout is ours alone.
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            Map<String, Object> answer = new LinkedHashMap<>();
            try {
                JsonNode args = JSON.readTree(line);
                Op op = ops.get(args.path("op").asText());
                if (op == null) throw new IllegalArgumentException("unknown op " + args.path("op"));
                answer.put("ok", op.run(args));
            } catch (Throwable t) {
                answer.put("error", Clients.describe(t));
                t.printStackTrace();
            }
            out.println(JSON.writeValueAsString(answer));
        }
    }
}
