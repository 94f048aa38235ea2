import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

/** What the admin tools beside it share: their client, and what they print (an error with its
 * causes, JSON strings). */
final class AdminText {
    private AdminText() {
    }

    /** An admin client of {@code bootstrap} whose every call gives up after {@code timeoutMs}. */
    static Admin connect(String bootstrap, int timeoutMs) {
        Properties config = new Properties();
        config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, timeoutMs);
        config.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, timeoutMs);
        return Admin.create(config);
    }

    /** The error and its causes, without the ExecutionException wrapper of admin futures. */
    static String explain(Throwable error) {
        List<String> causes = new ArrayList<>();
        for (Throwable e = error; e != null; e = e.getCause()) {
            if (!(e instanceof ExecutionException)) {
                String message = e.getMessage();
                causes.add(e.getClass().getSimpleName() + (message == null ? "" : ": " + message));
            }
        }
        return String.join("; caused by ", causes);
    }

    /** {@code text} as a JSON string ({@code ""} for null). */
    static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : (text == null ? "" : text).toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> out.append(c < 0x20 ? String.format("\\u%04x", (int) c) : "" + c);
            }
        }
        return out.append('"').toString();
    }
}
