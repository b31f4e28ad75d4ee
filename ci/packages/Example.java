// The Java package's example (ci/test-packages.sh compiles it in a scratch Maven project
// that depends on io.slotlane:slotlane from the local repository, offline): SETs and GETs
// over the cluster at args[0] in one pipeline, an MGET across slots, every reply checked.
import io.slotlane.ClientOptions;
import io.slotlane.Pipeline;
import io.slotlane.SlotlaneClient;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

public final class Example {
    private static String text(Object o) {
        return o instanceof byte[] ? new String((byte[]) o, StandardCharsets.UTF_8) : String.valueOf(o);
    }

    public static void main(String[] args) {
        try (SlotlaneClient c = SlotlaneClient.create(ClientOptions.builder().uri(args[0]).build())) {
            List<Object> replies;
            try (Pipeline p = c.pipeline()) {
                for (int i = 0; i < 32; i++) p.set("pkg:java:" + i, "value-" + i);
                for (int i = 0; i < 32; i++) p.get("pkg:java:" + i);
                replies = p.sync();
            }
            for (int i = 0; i < 32; i++) {
                if (!text(replies.get(32 + i)).equals("value-" + i)) {
                    throw new AssertionError("GET pkg:java:" + i + " = " + text(replies.get(32 + i)));
                }
            }
            List<String> m = c.mget("pkg:java:0", "pkg:java:7", "pkg:java:31");
            if (!m.equals(Arrays.asList("value-0", "value-7", "value-31"))) throw new AssertionError("MGET " + m);
            String jar = SlotlaneClient.class.getProtectionDomain().getCodeSource().getLocation().getPath();
            System.out.println("java ok: 32 SET + 32 GET, MGET across slots, slotlane from " + jar);
        }
    }
}
