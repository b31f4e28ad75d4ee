package io.slotlane;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import io.slotlane.internal.slotlaneConstants;
import org.junit.jupiter.api.Test;

/** The loader, the struct layouts, and the build's check of slotlane.i against slotlane.h. */
class NativeTest {
    @Test
    void loadedFromTheJarResource() {
        SlotlaneClient.version();
        String from = NativeLoader.loadedFrom();
        assertNotNull(from);
        assertTrue(from.startsWith("resource:"), from);
        Path file = Paths.get(from.substring("resource:".length()));
        assertTrue(Files.isRegularFile(file));
        assertTrue(file.getParent().getFileName().toString().startsWith("slotlane-"));
        assertTrue(NativeLoader.resourcePath().matches("/io/slotlane/native/[a-z]+-[a-z0-9_]+/libslotlane_jni\\.so"),
                NativeLoader.resourcePath());
        assertNotNull(NativeLoader.class.getResource(NativeLoader.resourcePath()));
        NativeLoader.load(); // idempotent
        assertEquals(from, NativeLoader.loadedFrom());
    }

    @Test
    void layoutsAsCompiled() {
        assertEquals(24, slotlaneConstants.SL_REPLY_RECORD_SIZE);
        assertEquals(32, slotlaneConstants.SL_SIZES_SIZE);
        assertEquals(136, slotlaneConstants.SL_STATS_SIZE);
        assertEquals(24, slotlaneConstants.SL_ROUTE_SIZE);
        assertEquals(56, slotlaneConstants.SL_COMPLETION_SIZE);
    }

    /** Runs build-native.sh against a copy of the tree whose header was changed. */
    private static String buildWithHeader(Path tmp, String addition) throws Exception {
        Path root = TestServers.ROOT;
        Path copy = tmp.resolve("tree");
        Files.createDirectories(copy.resolve("core/include"));
        Files.createDirectories(copy.resolve("core/src"));
        Files.createDirectories(copy.resolve("bindings"));
        Files.copy(root.resolve("VERSION"), copy.resolve("VERSION"));
        Files.copy(root.resolve("core/build.cfg"), copy.resolve("core/build.cfg"));
        Files.copy(root.resolve("core/describe.py"), copy.resolve("core/describe.py"));
        Files.copy(root.resolve("bindings/slotlane.i"), copy.resolve("bindings/slotlane.i"));
        Files.copy(root.resolve("core/include/slotlane_uv.h"), copy.resolve("core/include/slotlane_uv.h"));
        String header = Files.readString(root.resolve("core/include/slotlane.h"));
        int end = header.lastIndexOf("#ifdef __cplusplus");
        Files.writeString(copy.resolve("core/include/slotlane.h"), header.substring(0, end) + addition + "\n" + header.substring(end));
        List<String> cmd = new ArrayList<>(List.of("bash", root.resolve("java/build-native.sh").toString(), copy.toString(),
                tmp.resolve("target").toString()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertNotEquals(0, p.exitValue(), "the build should fail: " + out);
        return out;
    }

    @Test
    void buildFailsWhenTheHeaderNeedsATypemap(@org.junit.jupiter.api.io.TempDir Path tmp) throws Exception {
        String out = buildWithHeader(tmp, "typedef struct sl_thing sl_thing;\nSL_EXTERN int sl_thing_new(sl_thing **out);");
        assertTrue(out.contains("without an address typemap") && out.contains("SWIGTYPE_p"), out);
    }

    @Test
    void buildFailsWhenAFunctionIsNotWrapped(@org.junit.jupiter.api.io.TempDir Path tmp) throws Exception {
        String out = buildWithHeader(tmp, "#ifndef SWIG\nSL_EXTERN int sl_hidden_from_swig(int x);\n#endif");
        assertTrue(out.contains("not wrapped") && out.contains("sl_hidden_from_swig"), out);
    }
}
