using System;
using System.Collections.Generic;
using System.Linq;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;

namespace Slotlane.Tests
{
    /// <summary>Subscriber against the bundled server (per-shard cluster) and a Redis Cluster: classic,
    /// pattern and sharded messages, order, a 1 MiB payload, unsubscribe, the queue bound's drops, the
    /// listener event and ReceiveAsync, and Close while a poll waits. Every wait ends on a record or a
    /// counter; the limits only turn a hang into a failure.</summary>
    [TestFixture]
    public class SubscriberTests
    {
        private static readonly TimeSpan Wait = TimeSpan.FromSeconds(30);

        private static string Url(string server) { return server == "bundled" ? Servers.Bundled : Servers.ClusterRedis; }

        private static PubSubMessage Take(Subscriber s, PubSubMessageKind want)
        {
            PubSubMessage m = s.Poll(Wait);
            Assert.That(m, Is.Not.Null, "no " + want + " within " + Wait);
            Assert.That(m.Kind, Is.EqualTo(want), m.ToString());
            return m;
        }

        private static void Until(Func<bool> done, string what)
        {
            DateTime deadline = DateTime.UtcNow + Wait;
            while (!done())
            {
                if (DateTime.UtcNow > deadline) Assert.Fail(what);
                Thread.Yield();
            }
        }

        [TestCase("bundled")]
        [TestCase("redis")]
        public void MessagesPatternsAndShards(string server)
        {
            string url = Url(server);
            using (var c = SlotlaneClient.Connect(url))
            using (var s = c.CreateSubscriber())
            {
                s.Subscribe("csps:news");
                Assert.That(Take(s, PubSubMessageKind.Subscribe).Channel, Is.EqualTo("csps:news"));
                s.PSubscribe("csps:n*");
                Assert.That(Take(s, PubSubMessageKind.PSubscribe).Channel, Is.EqualTo("csps:n*"));
                s.SSubscribe("csps:{s}shard");
                PubSubMessage conf = Take(s, PubSubMessageKind.SSubscribe);
                Assert.That(conf.Channel, Is.EqualTo("csps:{s}shard"));
                Assert.That(conf.Count, Is.EqualTo(1));

                var binary = new byte[300];
                for (int i = 0; i < binary.Length; i++) binary[i] = (byte)i;
                c.Publish("csps:news", binary);
                PubSubMessage m = Take(s, PubSubMessageKind.Message);
                Assert.That(m.Channel, Is.EqualTo("csps:news"));
                Assert.That(m.IsMessage, Is.True);
                Assert.That(m.Payload, Is.EqualTo(binary));
                m = Take(s, PubSubMessageKind.PMessage);
                Assert.That(m.Pattern, Is.EqualTo("csps:n*"));
                Assert.That(m.Channel, Is.EqualTo("csps:news"));
                Assert.That(m.Payload, Is.EqualTo(binary));

                var big = new byte[1 << 20];   // larger than the first data buffer (64 KiB): it grows
                for (int i = 0; i < big.Length; i++) big[i] = (byte)(i * 7);
                Assert.That(c.Spublish("csps:{s}shard", big), Is.EqualTo(1));
                m = Take(s, PubSubMessageKind.SMessage);
                Assert.That(m.Channel, Is.EqualTo("csps:{s}shard"));
                Assert.That(m.Payload, Is.EqualTo(big));

                // order per channel, nothing lost (each message comes as message and pmessage)
                const int n = 1000;
                using (var p = c.CreatePipeline())
                {
                    for (int i = 0; i < n; i++) p.Add("PUBLISH", "csps:news", i);
                    p.ExecuteOrThrow();
                }
                var got = new List<string>();
                int pm = 0;
                for (int i = 0; i < 2 * n; i++)
                {
                    m = s.Poll(Wait);
                    Assert.That(m, Is.Not.Null, "message " + i + " of " + 2 * n);
                    if (m.Kind == PubSubMessageKind.Message) got.Add(m.PayloadText);
                    else if (m.Kind == PubSubMessageKind.PMessage) pm++;
                }
                Assert.That(got, Is.EqualTo(Enumerable.Range(0, n).Select(i => i.ToString()).ToList()));
                Assert.That(pm, Is.EqualTo(n));

                s.Unsubscribe("csps:news");
                Assert.That(Take(s, PubSubMessageKind.Unsubscribe).Channel, Is.EqualTo("csps:news"));
                s.PUnsubscribe();
                Assert.That(Take(s, PubSubMessageKind.PUnsubscribe).Channel, Is.EqualTo("csps:n*"));
                Assert.That(c.Publish("csps:news", "after"), Is.EqualTo(0));  // nobody listens any more
                Assert.That(s.Poll(TimeSpan.Zero), Is.Null);
                s.SUnsubscribe("csps:{s}shard");
                Assert.That(Take(s, PubSubMessageKind.SUnsubscribe).Channel, Is.EqualTo("csps:{s}shard"));
                SubscriberStats st = s.GetStats();
                Assert.That(st.Confirmed, Is.EqualTo(0), st.ToString());
                Assert.That(st.Messages, Is.EqualTo(3 + 2 * n), st.ToString());
                Assert.That(st.Dropped, Is.EqualTo(0), st.ToString());
                Assert.That(st.ConnectionLosses, Is.EqualTo(0), st.ToString());
            }
        }

        [Test]
        public void BinaryNamesAndReceiveAsync()
        {
            string url = Servers.Bundled;
            using (var c = SlotlaneClient.Connect(url))
            using (var s = Subscriber.Connect(new ClientOptions { Url = url }))
            {
                byte[] name = { 0xff, 0x00, (byte)'c', 0x80 };
                s.Subscribe(name);
                PubSubMessage m = s.ReceiveAsync().Result;
                Assert.That(m.Kind, Is.EqualTo(PubSubMessageKind.Subscribe));
                Assert.That(m.ChannelBytes, Is.EqualTo(name));
                Task<PubSubMessage> next = s.ReceiveAsync();
                Assert.That(c.Execute("PUBLISH", name, "hi"), Is.EqualTo(1L));
                Assert.That(next.Wait(Wait), Is.True, "ReceiveAsync did not complete");
                Assert.That(next.Result.ChannelBytes, Is.EqualTo(name));
                Assert.That(next.Result.PayloadText, Is.EqualTo("hi"));

                // a cancelled wait loses nothing: the next wait gets the message
                var cts = new CancellationTokenSource();
                Task<PubSubMessage> cancelled = s.ReceiveAsync(cts.Token);
                cts.Cancel();
                Assert.Throws<AggregateException>(() => cancelled.Wait(Wait));
                Assert.That(cancelled.IsCanceled, Is.True);
                Assert.That(c.Execute("PUBLISH", name, "kept"), Is.EqualTo(1L));
                Task<PubSubMessage> after = s.ReceiveAsync();
                Assert.That(after.Wait(Wait), Is.True);
                Assert.That(after.Result.PayloadText, Is.EqualTo("kept"));

                // closed: a waiting ReceiveAsync completes with null
                Task<PubSubMessage> waiting = s.ReceiveAsync();
                s.Close();
                Assert.That(waiting.Wait(Wait), Is.True, "ReceiveAsync did not return after Close");
                Assert.That(waiting.Result, Is.Null);
                Assert.That(s.IsClosed, Is.True);
            }
        }

        [Test]
        public void BoundedQueueDropsAndReports()
        {
            string url = Servers.Bundled;
            using (var c = SlotlaneClient.Connect(url))
            using (var s = c.CreateSubscriber(new SubscriberOptions { MaxQueueBytes = 4096 }))
            {
                s.Subscribe("csps:bounded");
                Take(s, PubSubMessageKind.Subscribe);
                const int n = 200;
                string payload = new string('x', 100);
                using (var p = c.CreatePipeline())
                {
                    for (int i = 0; i < n; i++) p.Add("PUBLISH", "csps:bounded", payload);
                    p.ExecuteOrThrow();
                }
                // nothing is drained meanwhile: every message is queued or dropped
                Until(() => { var x = s.GetStats(); return x.Messages + x.Dropped >= n; },
                      "the subscriber did not see " + n + " messages: " + s.GetStats());
                SubscriberStats st = s.GetStats();
                Assert.That(st.Dropped, Is.GreaterThan(0), st.ToString());
                Assert.That(st.QueuedBytes, Is.LessThan(8192), st.ToString());
                long received = 0, reported = 0;
                PubSubMessage m;
                while ((m = s.Poll(TimeSpan.Zero)) != null)
                {
                    if (m.Kind == PubSubMessageKind.Message) received++;
                    else if (m.Kind == PubSubMessageKind.Overflow) reported += m.Count;
                }
                Assert.That(reported, Is.EqualTo(st.Dropped));
                Assert.That(received + reported, Is.EqualTo(n));
                Assert.That(received, Is.EqualTo(st.Messages));
            }
            Assert.Throws<ArgumentOutOfRangeException>(() => Subscriber.Connect(new ClientOptions { Url = Servers.Bundled }, new SubscriberOptions { MaxQueueBytes = 0 }));
            Assert.Throws<ArgumentOutOfRangeException>(() => Subscriber.Connect(new ClientOptions { Url = Servers.Bundled }, new SubscriberOptions { HealthCheckInterval = TimeSpan.FromSeconds(-1) }));
        }

        [Test]
        public void CloseWhilePollWaits()
        {
            var s = Subscriber.Connect(Servers.Bundled);
            s.Subscribe("csps:wait");
            Take(s, PubSubMessageKind.Subscribe);
            PubSubMessage result = null;
            bool returned = false;
            var t = new Thread(() => { result = s.Poll(Timeout.InfiniteTimeSpan); returned = true; }) { Name = "poller", IsBackground = true };
            t.Start();
            Until(() => Volatile.Read(ref s.InDrain) > 0, "the poller never reached sl_subscriber_drain");
            s.Close();
            Assert.That(t.Join(Wait), Is.True, "Poll did not return after Close");
            Assert.That(returned, Is.True);
            Assert.That(result, Is.Null);
            Assert.That(s.IsClosed, Is.True);
            var e = Assert.Throws<InvalidOperationException>(() => s.Subscribe("csps:late"));
            StringAssert.Contains("closed", e.Message);
            s.Close();  // idempotent
            s.Dispose();
            s.Dispose();
            Assert.That(s.Poll(TimeSpan.Zero), Is.Null);
            Assert.Throws<ObjectDisposedException>(() => s.Subscribe("csps:late"));
            Assert.Throws<ObjectDisposedException>(() => s.GetStats());
        }

        [Test]
        public void DisposeWhilePollWaits()
        {
            var s = Subscriber.Connect(Servers.Bundled);
            bool returned = false;
            var t = new Thread(() => { s.Poll(Timeout.InfiniteTimeSpan); returned = true; }) { Name = "poller", IsBackground = true };
            t.Start();
            Until(() => Volatile.Read(ref s.InDrain) > 0, "the poller never reached sl_subscriber_drain");
            s.Dispose();
            Assert.That(t.Join(Wait), Is.True, "Poll did not return after Dispose");
            Assert.That(returned, Is.True);
        }

        [Test]
        public void MessageReceivedEvent()
        {
            string url = Servers.Bundled;
            using (var c = SlotlaneClient.Connect(url))
            using (var s = c.CreateSubscriber())
            {
                var got = new System.Collections.Concurrent.BlockingCollection<PubSubMessage>();
                object sender = null;
                s.MessageReceived += (o, e) => { sender = o; got.Add(e.Message); };
                Assert.Throws<InvalidOperationException>(() => s.Poll(TimeSpan.Zero));
                Assert.Throws<InvalidOperationException>(() => s.ReceiveAsync());
                s.Subscribe("csps:listen");
                PubSubMessage m;
                Assert.That(got.TryTake(out m, Wait), Is.True);
                Assert.That(m.Kind, Is.EqualTo(PubSubMessageKind.Subscribe));
                Assert.That(sender, Is.SameAs(s));
                for (int i = 0; i < 10; i++) Assert.That(c.Publish("csps:listen", "hello" + i), Is.EqualTo(1));
                for (int i = 0; i < 10; i++)
                {
                    Assert.That(got.TryTake(out m, Wait), Is.True);
                    Assert.That(m.PayloadText, Is.EqualTo("hello" + i));
                }
            }
        }

        [Test]
        public void ResubscribedAfterTheServerKillsTheConnection()
        {
            string url = Servers.PlainRedis;
            using (var c = SlotlaneClient.Connect(url))
            using (var s = c.CreateSubscriber())
            {
                s.Subscribe("csps:resub");
                s.PSubscribe("csps:re*");
                Take(s, PubSubMessageKind.Subscribe);
                Take(s, PubSubMessageKind.PSubscribe);
                Assert.That(c.Execute("CLIENT", "KILL", "TYPE", "pubsub"), Is.EqualTo(1L));
                Assert.That(Take(s, PubSubMessageKind.ConnectionLost).PayloadText, Is.Not.Empty);
                var again = new Dictionary<SubscriptionKind, string>();
                while (again.Count < 2)
                {
                    PubSubMessage m = s.Poll(Wait);
                    Assert.That(m, Is.Not.Null, "no RESUBSCRIBED for both subscriptions");
                    if (m.Kind == PubSubMessageKind.Resubscribed) again[m.SubscriptionKind] = m.Channel;
                    else Assert.That(m.Kind, Is.EqualTo(PubSubMessageKind.Subscribe).Or.EqualTo(PubSubMessageKind.PSubscribe), m.ToString());
                }
                Assert.That(again[SubscriptionKind.Channel], Is.EqualTo("csps:resub"));
                Assert.That(again[SubscriptionKind.Pattern], Is.EqualTo("csps:re*"));
                // the resubscription is the server's: a publish reaches both again
                Until(() => c.Publish("csps:resub", "back") == 2 || Drop(s), "the server does not see both subscriptions again");
                SubscriberStats st = s.GetStats();
                Assert.That(st.ConnectionLosses, Is.EqualTo(1), st.ToString());
                Assert.That(st.Resubscribed, Is.EqualTo(2), st.ToString());
            }
        }

        [Test]
        public void ShardChannelFollowsItsSlotToAnotherPrimary()
        {
            string url = Servers.StartChaos();
            try
            {
                using (var c = SlotlaneClient.Connect(url))
                using (var s = c.CreateSubscriber())
                {
                    const string ch = "csmv:{m}ch";
                    s.SSubscribe(ch);
                    Take(s, PubSubMessageKind.SSubscribe);
                    Assert.That(c.Spublish(ch, "before"), Is.EqualTo(1));
                    Assert.That(Take(s, PubSubMessageKind.SMessage).PayloadText, Is.EqualTo("before"));
                    int slot = SlotlaneClient.KeySlot(ch), from = 0, to = 0;
                    foreach (object[] range in (object[])c.Execute("CLUSTER", "SLOTS"))
                    {
                        int port = (int)(long)((object[])range[2])[1];
                        if ((long)range[0] <= slot && slot <= (long)range[1]) from = port;
                        else if (to == 0) to = port;
                    }
                    Assert.That(from, Is.Not.EqualTo(0));
                    Assert.That(to, Is.Not.EqualTo(0));
                    Servers.Script("redis-cluster.sh", "migrate " + Servers.ChaosDir + " " + slot + " " + from + " " + to);
                    // the old owner's SUNSUBSCRIBE: the core subscribes on the new owner and says so
                    PubSubMessage m;
                    do
                    {
                        m = s.Poll(Wait);
                        Assert.That(m, Is.Not.Null, "no Resubscribed after the slot moved");
                        Assert.That(m.Kind, Is.Not.EqualTo(PubSubMessageKind.Error), m.ToString());
                    } while (m.Kind != PubSubMessageKind.Resubscribed);
                    Assert.That(m.Channel, Is.EqualTo(ch));
                    Assert.That(m.SubscriptionKind, Is.EqualTo(SubscriptionKind.Shard));
                    Until(() => c.Spublish(ch, "after") == 1, "the new owner has no subscriber of " + ch);
                    do
                    {
                        m = s.Poll(Wait);
                        Assert.That(m, Is.Not.Null, "no message from the new owner");
                    } while (m.Kind != PubSubMessageKind.SMessage);
                    Assert.That(m.PayloadText, Is.EqualTo("after"));
                    Assert.That(s.GetStats().Resubscribed, Is.GreaterThanOrEqualTo(1));
                }
            }
            finally { Servers.StopChaos(); }
        }

        [Test]
        public void ShardOwnerKilledAndRestartedReportsTheGap()
        {
            string url = Servers.StartChaos();
            try
            {
                using (var c = SlotlaneClient.Connect(new ClientOptions { Url = url, ConnectTimeout = TimeSpan.FromMilliseconds(300) }))
                using (var s = c.CreateSubscriber(new SubscriberOptions { HealthCheckInterval = TimeSpan.FromSeconds(1) }))
                {
                    const string ch = "cskill:{k}ch";
                    s.SSubscribe(ch);
                    Take(s, PubSubMessageKind.SSubscribe);
                    int slot = SlotlaneClient.KeySlot(ch), owner = 0;
                    foreach (object[] range in (object[])c.Execute("CLUSTER", "SLOTS"))
                        if ((long)range[0] <= slot && slot <= (long)range[1]) owner = (int)(long)((object[])range[2])[1];
                    Servers.Script("redis-cluster.sh", "kill " + Servers.ChaosDir + " " + owner);
                    PubSubMessage lost = Take(s, PubSubMessageKind.ConnectionLost);
                    StringAssert.Contains(owner.ToString(), lost.PayloadText);
                    Servers.Script("redis-cluster.sh", "restart " + Servers.ChaosDir + " " + owner);
                    PubSubMessage m;
                    do
                    {
                        m = s.Poll(Wait);
                        Assert.That(m, Is.Not.Null, "no Resubscribed after the owner came back");
                    } while (m.Kind != PubSubMessageKind.Resubscribed);
                    Assert.That(m.Channel, Is.EqualTo(ch));
                    Assert.That(m.SubscriptionKind, Is.EqualTo(SubscriptionKind.Shard));
                    Until(() => c.Spublish(ch, "back") == 1 || Drop(s), "the restarted owner has no subscriber of " + ch);
                    SubscriberStats st = s.GetStats();
                    Assert.That(st.ConnectionLosses, Is.GreaterThanOrEqualTo(1), st.ToString());
                    Assert.That(st.Resubscribed, Is.GreaterThanOrEqualTo(1), st.ToString());
                }
            }
            finally { Servers.StopChaos(); }
        }

        // Until's helper: confirmations still queued are taken so the loop only waits on the server.
        private static bool Drop(Subscriber s) { s.Poll(TimeSpan.Zero); return false; }

        [Test]
        public void BadArguments()
        {
            using (var s = Subscriber.Connect(Servers.Bundled))
            {
                Assert.Throws<ArgumentException>(() => s.Subscribe(new string[0]));
                Assert.Throws<ArgumentException>(() => s.Subscribe("ok", null));
                Assert.Throws<ArgumentNullException>(() => s.Subscribe((string[])null));
                Assert.Throws<ArgumentException>(() => s.PSubscribe((byte[])null));
                Assert.Throws<ArgumentException>(() => s.PSubscribe(new byte[] { 1 }, (byte[])null));
                Assert.Throws<ArgumentOutOfRangeException>(() => s.Poll(TimeSpan.FromSeconds(-2)));
                s.Unsubscribe();   // nothing subscribed: a no-op
                Assert.That(s.Poll(TimeSpan.Zero), Is.Null);
            }
            Assert.Throws<ArgumentNullException>(() => Subscriber.Connect((ClientOptions)null));
            Assert.Throws<ArgumentException>(() => Subscriber.Connect(new ClientOptions()));
            Assert.Throws<SlotlaneConnectionException>(() => Subscriber.Connect(new ClientOptions { Host = Servers.Host, Port = Servers.UnusedPort, ConnectTimeout = TimeSpan.FromMilliseconds(300) }));
        }
    }
}
