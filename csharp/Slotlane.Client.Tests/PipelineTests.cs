using System;
using System.Collections.Generic;
using System.Linq;
using System.Text;
using NUnit.Framework;
#if NUNIT2
using OneTimeSetUpAttribute = NUnit.Framework.TestFixtureSetUpAttribute;
using OneTimeTearDownAttribute = NUnit.Framework.TestFixtureTearDownAttribute;
#endif

namespace Slotlane.Tests
{
    /// <summary>Pipelines against the bundled server: every slot, order, errors in place, big replies
    /// (the "needs N bytes" path), reuse.</summary>
    [TestFixture]
    public class PipelineTests
    {
        private SlotlaneClient _c;

        [OneTimeSetUp]
        public void Open() { _c = SlotlaneClient.Connect(new ClientOptions { Url = Servers.Bundled }); }

        [OneTimeTearDown]
        public void Close() { if (_c != null) _c.Dispose(); }

        /// <summary>One key per slot, 0..16383.</summary>
        internal static string[] KeyPerSlot()
        {
            var keys = new string[16384];
            int found = 0;
            for (int i = 0; found < 16384; i++)
            {
                string k = "slot-key:" + i;
                int s = SlotlaneClient.KeySlot(k);
                if (keys[s] == null) { keys[s] = k; found++; }
            }
            return keys;
        }

        [Test]
        public void PipelineOverAllSlots()
        {
            _c.Flushall();
            string[] keys = KeyPerSlot();
            using (var p = _c.CreatePipeline())
            {
                for (int s = 0; s < keys.Length; s++) p.Set(keys[s], "v" + s);
                object[] r = p.Execute();
                Assert.That(r.Length, Is.EqualTo(16384));
                Assert.That(r.All(x => "OK".Equals(x)), Is.True);
                Assert.That(p.Count, Is.EqualTo(0));
                for (int s = 0; s < keys.Length; s++) p.Get(keys[s]);
                p.Add("DBSIZE"); // keyless: one node, or all of them if the core applies DBSIZE's request policy
                r = p.Execute();
                for (int s = 0; s < keys.Length; s++) Assert.That(Encoding.UTF8.GetString((byte[])r[s]), Is.EqualTo("v" + s));
                Assert.That((long)r[16384], Is.GreaterThan(0).And.LessThanOrEqualTo(16384));
            }
            Assert.That(_c.Dbsize(), Is.EqualTo(16384));
            // each of the 4 shards holds its quarter
            long sum = 0;
            for (int i = 0; i < 4; i++)
            {
                long n = (long)_c.Execute(Route.Node(Servers.Host + ":" + (Servers.BundledPort + i)), "DBSIZE");
                Assert.That(n, Is.EqualTo(4096));
                sum += n;
            }
            Assert.That(sum, Is.EqualTo(16384));
        }

        [Test]
        public void ErrorsFailOnlyTheirOwnCommand()
        {
            _c.Flushall();
            using (var p = _c.CreatePipeline())
            {
                p.Add("RPUSH", "list", "a");
                p.Add("SET", "s", "x");
                p.Add("GET", "list");          // WRONGTYPE
                p.Add("INCR", "s");            // not an integer
                p.Add("NOPE");                 // unknown command
                p.Add("GET", "s");
                p.Add("MGET", "s", "list", "missing");
                object[] r = p.Execute();
                Assert.That(r[0], Is.EqualTo(1L));
                Assert.That(r[1], Is.EqualTo("OK"));
                Assert.That(((SlotlaneReplyException)r[2]).Prefix, Is.EqualTo("WRONGTYPE"));
                Assert.That(r[3], Is.InstanceOf<SlotlaneReplyException>());
                Assert.That(r[4], Is.InstanceOf<SlotlaneReplyException>());
                Assert.That(r[5], Is.EqualTo(Encoding.UTF8.GetBytes("x")));
                var mget = (object[])r[6];
                Assert.That(mget[0], Is.EqualTo(Encoding.UTF8.GetBytes("x")));
                Assert.That(mget[1], Is.Null); // MGET gives nil for a key of another type
                Assert.That(mget[2], Is.Null);
                p.Add("GET", "list");
                p.Add("PING");
                var ex = Assert.Throws<SlotlaneReplyException>(() => p.ExecuteOrThrow());
                Assert.That(ex.Prefix, Is.EqualTo("WRONGTYPE"));
                p.Add("PING");
                Assert.That(p.ExecuteOrThrow(), Is.EqualTo(new object[] { "PONG" }));
            }
        }

        [Test]
        public void ReplyHandlesKnowTheirCommandExecutionAndShape()
        {
            using (var p = _c.CreatePipeline())
            {
                p.Set("rh:s", "text");
                p.Incrby("rh:n", 0);
                Reply<string> s = p.Get("rh:s");                       // fast path, nullable-string shape
                Reply<string> missing = p.Get("rh:missing-" + Guid.NewGuid());
                Reply<long> n = p.Incrby("rh:n", 2);                 // builder path, int shape
                Reply<bool> set = p.Set("rh:t", "x", new SetOptions { Xx = false });
                Reply<object> any = p.Queue(new object[] { "GET", "rh:s" }, v => (object)("custom:" + Encoding.UTF8.GetString((byte[])v))); // a shape without a constant id
                Assert.Throws<InvalidOperationException>(() => { var unused = s.Value; }, "not executed yet");
                p.Execute();
                Assert.That(s.Value, Is.EqualTo("text"));
                Assert.That(missing.Value, Is.Null);
                Assert.That(n.Value, Is.TypeOf<long>());
                Assert.That(set.Value, Is.True);
                Assert.That(any.Value, Is.EqualTo("custom:text"));
                Assert.That(s.ToString(), Is.EqualTo("Reply #2"));
                p.Get("rh:s");
                p.Execute();                                           // a handle is valid until the next execution
                Assert.Throws<InvalidOperationException>(() => { var unused = s.Value; });
                Assert.Throws<InvalidOperationException>(() => { var unused = default(Reply<string>).Value; });
            }
        }

        [Test]
        public void EmptyPipelineAndClear()
        {
            using (var p = _c.CreatePipeline())
            {
                Assert.That(p.Execute(), Is.Empty);
                p.Add("PING");
                p.Add("PING");
                p.Clear();
                Assert.That(p.Count, Is.EqualTo(0));
                Assert.That(p.Execute(), Is.Empty);
            }
        }

        [Test]
        public void LargeRepliesGrowTheBuffersWithoutResending()
        {
            _c.Flushall();
            var big = new byte[3 << 20];
            new Random(7).NextBytes(big);
            _c.Set("big", big);
            var before = _c.GetStats();
            using (var p = _c.CreatePipeline())
            {
                for (int i = 0; i < 5; i++) p.Add("GET", "big");
                for (int i = 0; i < 5000; i++) p.Add("PING");   // many records too
                object[] r = p.Execute();
                for (int i = 0; i < 5; i++) Assert.That((byte[])r[i], Is.EqualTo(big));
                Assert.That(r.Skip(5).All(x => "PONG".Equals(x)), Is.True);
            }
            var after = _c.GetStats();
            Assert.That(after.Commands - before.Commands, Is.EqualTo(5005), "sent once");
            Assert.That(after.BytesRead - before.BytesRead, Is.LessThan(5L * big.Length + 200000), "read once");
        }

        [Test]
        public void LargeArgumentsAndManyCommandsGrowTheEncoder()
        {
            using (var p = _c.CreatePipeline())
            {
                var v = new string('x', 100000) + "é";
                for (int i = 0; i < 20; i++) p.Set("la:" + i, v);
                Assert.That(p.Execute().All(x => "OK".Equals(x)), Is.True);
                for (int i = 0; i < 20; i++) p.Get("la:" + i);
                Assert.That(p.Execute().All(x => Encoding.UTF8.GetString((byte[])x) == v), Is.True);
            }
        }

        [Test]
        public void SplitCommandsKeepTheirPlaceInThePipeline()
        {
            _c.Flushall();
            using (var p = _c.CreatePipeline())
            {
                p.Add("MSET", "a:1", "1", "b:2", "2", "c:3", "3", "d:4", "4");
                p.Add("MGET", "d:4", "c:3", "b:2", "a:1", "zz");
                p.Add("DEL", "a:1", "b:2", "nope");
                p.Add("EXISTS", "a:1", "c:3", "d:4");
                object[] r = p.Execute();
                Assert.That(r[0], Is.EqualTo("OK"));
                Assert.That(((object[])r[1]).Select(x => x == null ? null : Encoding.UTF8.GetString((byte[])x)), Is.EqualTo(new[] { "4", "3", "2", "1", null }));
                Assert.That(r[2], Is.EqualTo(2L));
                Assert.That(r[3], Is.EqualTo(2L));
            }
        }
    }
}
