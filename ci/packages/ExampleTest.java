// A user's test in a scratch Maven project (ci/test-packages.sh java): the installed jar's
// JUnit 5 extension starts the embedded 4-shard slotlane-server for the class and hands it to
// the test; 64 keys over its slots, every reply checked.
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.slotlane.ClientOptions;
import io.slotlane.SlotlaneClient;
import io.slotlane.testing.SlotlaneServer;
import io.slotlane.testing.SlotlaneServerExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SlotlaneServerExtension.class)
class ExampleTest {
    @Test
    void keysOverEveryShard(SlotlaneServer server) {
        assertEquals(4, server.ports().length);
        try (SlotlaneClient c = SlotlaneClient.create(ClientOptions.builder().uri(server.url()).build())) {
            for (int i = 0; i < 64; i++) c.set("pkg:java:t:" + i, Integer.toString(i));
            for (int i = 0; i < 64; i++) assertEquals(Integer.toString(i), c.get("pkg:java:t:" + i));
        }
        System.out.println("java-testing ok: 64 keys over " + server.ports().length + " shards at " + server.url());
    }
}
