package io.slotlane;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;

/**
 * Loads the native library (libslotlane and its JNI glue, {@code libslotlane_jni}) once per
 * class loader, in this order:
 * <ol>
 *   <li>the file named by the system property {@code slotlane.library.path}, when set;</li>
 *   <li>the system library: {@code System.loadLibrary("slotlane_jni")}
 *       ({@code java.library.path});</li>
 *   <li>the copy carried in the jar, {@code /io/slotlane/native/<os>-<arch>/libslotlane_jni.so},
 *       extracted to a versioned file under {@code slotlane.native.workdir} (default
 *       {@code java.io.tmpdir}): {@code slotlane-<version>-<sha256 prefix>/libslotlane_jni.so}.
 *       An existing file with the same content is reused; a new one is written to a temporary
 *       name and moved into place, so concurrent JVMs never load a half-written file.</li>
 * </ol>
 * Set {@code slotlane.native.workdir} where {@code /tmp} is mounted noexec.
 */
public final class NativeLoader {
    private static final String NAME = "slotlane_jni";
    private static volatile String loadedFrom;

    private NativeLoader() {}

    /**
     * Loads the library unless it is loaded already.
     *
     * @throws UnsatisfiedLinkError when no variant could be loaded (the message lists each attempt)
     */
    public static synchronized void load() {
        if (loadedFrom != null) return;
        StringBuilder why = new StringBuilder();
        String explicit = System.getProperty("slotlane.library.path");
        if (explicit != null && !explicit.isEmpty()) {
            System.load(Paths.get(explicit).toAbsolutePath().toString());
            loadedFrom = "path:" + explicit;
            return;
        }
        try {
            System.loadLibrary(NAME);
            loadedFrom = "system:" + NAME;
            return;
        } catch (UnsatisfiedLinkError e) {
            why.append("System.loadLibrary(\"").append(NAME).append("\"): ").append(e.getMessage());
        }
        String resource = resourcePath();
        try {
            Path file = extract(resource);
            System.load(file.toString());
            loadedFrom = "resource:" + file;
        } catch (IOException | UnsatisfiedLinkError e) {
            why.append("; extracting ").append(resource).append(": ").append(e);
            throw new UnsatisfiedLinkError("slotlane: cannot load the native library: " + why);
        }
    }

    /**
     * Where the library was loaded from: {@code "path:..."}, {@code "system:..."} or
     * {@code "resource:<extracted file>"}; null before {@link #load()}.
     *
     * @return the origin of the loaded library, or null
     */
    public static String loadedFrom() {
        return loadedFrom;
    }

    /**
     * The resource path of this platform's library inside the jar.
     *
     * @return e.g. {@code /io/slotlane/native/linux-x86_64/libslotlane_jni.so}
     */
    public static String resourcePath() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        if (os.startsWith("linux")) os = "linux";
        else if (os.startsWith("mac") || os.startsWith("darwin")) os = "darwin";
        else if (os.startsWith("windows")) os = "windows";
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        switch (arch) {
            case "amd64": case "x86_64": case "x86-64": arch = "x86_64"; break;
            case "aarch64": case "arm64": arch = "aarch64"; break;
            default: break;
        }
        return "/io/slotlane/native/" + os + "-" + arch + "/" + System.mapLibraryName(NAME);
    }

    private static volatile boolean serverLoaded;

    /**
     * Loads the embedded slotlane-server's library ({@code libslotlane_server_jni}, beside the
     * client's in the jar) for {@code io.slotlane.testing.SlotlaneServer}, unless loaded already.
     *
     * @throws UnsatisfiedLinkError when it cannot be loaded
     */
    public static synchronized void loadServer() {
        if (serverLoaded) return;
        String name = "slotlane_server_jni";
        String resource = resourcePath().replace(System.mapLibraryName(NAME), System.mapLibraryName(name));
        try {
            System.load(extract(resource, name).toString());
        } catch (IOException e) {
            throw new UnsatisfiedLinkError("slotlane: cannot load " + resource + ": " + e);
        }
        serverLoaded = true;
    }

    private static Path extract(String resource) throws IOException {
        return extract(resource, NAME);
    }

    private static Path extract(String resource, String name) throws IOException {
        byte[] bytes;
        try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
            if (in == null) throw new IOException("no such resource in the jar (platform not built)");
            bytes = in.readAllBytes();
        }
        String digest;
        try {
            digest = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes)).substring(0, 16);
        } catch (NoSuchAlgorithmException e) {
            throw new IOException(e);
        }
        String version = NativeLoader.class.getPackage() != null && NativeLoader.class.getPackage().getImplementationVersion() != null
                ? NativeLoader.class.getPackage().getImplementationVersion() : "dev";
        Path base = Paths.get(System.getProperty("slotlane.native.workdir", System.getProperty("java.io.tmpdir")));
        Path dir = base.resolve("slotlane-" + version + "-" + digest);
        Path file = dir.resolve(System.mapLibraryName(name));
        if (Files.isRegularFile(file) && Files.size(file) == bytes.length
                && java.util.Arrays.equals(Files.readAllBytes(file), bytes)) {
            return file;
        }
        Files.createDirectories(dir);
        Path tmp = Files.createTempFile(dir, "lib", ".tmp");
        try {
            Files.write(tmp, bytes);
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
        return file;
    }
}
