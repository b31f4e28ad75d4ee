using NUnit.Framework;
using Slotlane.Testing;
#if NUNIT2
using OneTimeSetUpAttribute = NUnit.Framework.TestFixtureSetUpAttribute;
using OneTimeTearDownAttribute = NUnit.Framework.TestFixtureTearDownAttribute;
#endif

namespace Slotlane.Testing
{
    // Shipped as source in the .nupkg (content/Slotlane.Testing/SlotlaneServerFixture.cs: the
    // package itself references no NUnit, so the user's test project compiles it against its
    // own NUnit; define NUNIT2 for NUnit 2.6) and compiled into this repository's tests.
    /// <summary>An NUnit fixture base: a <see cref="SlotlaneServer"/> (4 shards, ephemeral ports
    /// unless <see cref="ServerOptions"/> says otherwise) started before the fixture's tests and
    /// disposed after them. Derive a [TestFixture] from it and connect to <see cref="ServerUrl"/>.</summary>
    public abstract class SlotlaneServerFixture
    {
        /// <summary>The fixture's server (null outside its tests).</summary>
        protected SlotlaneServer Server { get; private set; }

        /// <summary>The server's URL (a cluster client discovers every shard from it).</summary>
        protected string ServerUrl { get { return Server.Url; } }

        /// <summary>Override to change the server's options.</summary>
        protected virtual SlotlaneServerOptions ServerOptions() { return new SlotlaneServerOptions(); }

        [OneTimeSetUp]
        public void StartSlotlaneServer() { Server = new SlotlaneServer(ServerOptions()); }

        [OneTimeTearDown]
        public void StopSlotlaneServer()
        {
            if (Server != null) Server.Dispose();
            Server = null;
        }
    }
}
