// A user's NUnit test in a scratch project (ci/test-packages.sh csharp): a fixture derived from
// the package's SlotlaneServerFixture (content/Slotlane.Testing/, compiled here against
// Debian's NUnit 2.6 with -define:NUNIT2) gets a 4-shard embedded server for its tests.
using System;
using NUnit.Framework;
using Slotlane;
using Slotlane.Testing;

[TestFixture]
public class ExampleFixtureTest : SlotlaneServerFixture
{
    [Test]
    public void KeysOverEveryShard()
    {
        Assert.That(Server.Ports.Count, Is.EqualTo(4));
        using (var c = SlotlaneClient.Connect(new ClientOptions { Url = ServerUrl }))
        {
            for (int i = 0; i < 64; i++) c.Set("pkg:cs:f:" + i, i.ToString());
            for (int i = 0; i < 64; i++) Assert.That(c.Get("pkg:cs:f:" + i), Is.EqualTo(i.ToString()));
        }
        Console.WriteLine("csharp-nunit ok: 64 keys over " + Server.Ports.Count + " shards at " + ServerUrl);
    }
}
