package io.slotlane.testing;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * A JUnit 5 extension: {@code @ExtendWith(SlotlaneServerExtension.class)} starts a
 * {@link SlotlaneServer} (4 shards, ephemeral ports) before the class's tests and closes it
 * after them; a test or constructor parameter of type {@link SlotlaneServer} receives it. Needs
 * junit-jupiter-api on the test class path (the slotlane jar does not depend on it).
 */
public final class SlotlaneServerExtension implements BeforeAllCallback, AfterAllCallback, ParameterResolver {
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(SlotlaneServerExtension.class);

    @Override
    public void beforeAll(ExtensionContext ctx) {
        ctx.getStore(NS).put("server", SlotlaneServer.start(4));
    }

    @Override
    public void afterAll(ExtensionContext ctx) {
        SlotlaneServer s = ctx.getStore(NS).remove("server", SlotlaneServer.class);
        if (s != null) s.close();
    }

    @Override
    public boolean supportsParameter(ParameterContext p, ExtensionContext ctx) {
        return p.getParameter().getType() == SlotlaneServer.class;
    }

    @Override
    public Object resolveParameter(ParameterContext p, ExtensionContext ctx) {
        for (ExtensionContext c = ctx; c != null; c = c.getParent().orElse(null)) {
            SlotlaneServer s = c.getStore(NS).get("server", SlotlaneServer.class);
            if (s != null) return s;
        }
        throw new IllegalStateException("no SlotlaneServer: the extension starts one per test class");
    }
}
