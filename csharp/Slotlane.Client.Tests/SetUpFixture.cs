using NUnit.Framework;
#if NUNIT2
using OneTimeTearDownAttribute = NUnit.Framework.TearDownAttribute;
#endif

namespace Slotlane.Tests
{
    /// <summary>Stops every server the tests started (by PID), after the last test of the namespace.</summary>
    [SetUpFixture]
    public class ServerCleanup
    {
        [OneTimeTearDown]
        public void StopServers() { Servers.StopAll(); }
    }
}
