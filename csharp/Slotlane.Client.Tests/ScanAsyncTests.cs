using System;
using System.Collections.Generic;
using System.Linq;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;

namespace Slotlane.Tests
{
    /// <summary>ClusterScan.Cursor (issue 23): pages of the cluster scan on the core's loop, against the sync
    /// scan, with MATCH, COUNT and TYPE, cancellation and misuse; the bundled 4-shard server and Redis Cluster.</summary>
    [TestFixture]
    public class ScanAsyncTests
    {
        public static IEnumerable<string> Where() { return new[] { "bundled", "cluster" }; }

        private static string Url(string where) { return where == "bundled" ? Servers.Bundled : Servers.ClusterRedis; }

        private const int Strings = 3000, Hashes = 200;

        private static void Fill(SlotlaneClient c, string prefix)
        {
            using (var p = c.CreatePipeline())
            {
                for (int i = 0; i < Strings; i++) p.Set(prefix + "s:" + i, i);
                for (int i = 0; i < Hashes; i++) p.Add("HSET", prefix + "h:" + i, "f", i);
                p.ExecuteOrThrow();
            }
        }

        /// <summary>Every page until the end; pages 3 and 6 are given a token cancelled right after the submission
        /// when <paramref name="cancelSome"/> (a page cancelled or completed: nothing lost either way).</summary>
        private static List<string> AllPages(ScanCursor cur, bool cancelSome, out int pages, out int cancelled)
        {
            var keys = new List<string>();
            pages = cancelled = 0;
            while (!cur.IsDone)
            {
                pages++;
                Assert.That(pages, Is.LessThan(10000), "the scan does not end: " + keys.Count + " keys, " + keys.Distinct().Count() + " distinct, " + cancelled + " cancelled");
                Task<IReadOnlyList<byte[]>> t;
                if (cancelSome && (pages == 3 || pages == 6))
                {
                    var cts = new CancellationTokenSource();
                    t = cur.NextPageAsync(cts.Token);
                    cts.Cancel();
                    try { t.Wait(); }
                    catch (AggregateException e) when (e.InnerException is TaskCanceledException) { cancelled++; continue; }
                }
                else t = cur.NextPageAsync();
                Assert.That(t.Wait(TimeSpan.FromSeconds(30)), Is.True, "a page did not complete");
                keys.AddRange(t.Result.Select(k => Encoding.UTF8.GetString(k)));
            }
            return keys;
        }

        private static List<string> Sync(SlotlaneClient c, string match, int count, string type)
        {
            return ClusterScan.Keys(c, match, count, type).Select(k => Encoding.UTF8.GetString(k)).ToList();
        }

        [Test, TestCaseSource("Where")]
        public void PagesSeeEveryKeyExactlyAsTheSyncScan(string where)
        {
            string prefix = "csas:" + where + ":";
            using (var c = SlotlaneClient.Connect(Url(where)))
            {
                Fill(c, prefix);
                var expectStrings = Enumerable.Range(0, Strings).Select(i => prefix + "s:" + i);
                var expectHashes = Enumerable.Range(0, Hashes).Select(i => prefix + "h:" + i).ToList();
                int pages, cancelled;

                // MATCH and COUNT: every key once, as the sync scan sees them
                List<string> got;
                using (var cur = ClusterScan.Cursor(c, prefix + "*", 100)) got = AllPages(cur, false, out pages, out cancelled);
                Console.WriteLine("{0}: {1} keys in {2} pages", where, got.Count, pages);
                Assert.That(got.Count, Is.EqualTo(got.Distinct().Count()), "a key came twice in a stable cluster");
                CollectionAssert.AreEquivalent(expectStrings.Concat(expectHashes), got);
                CollectionAssert.AreEquivalent(Sync(c, prefix + "*", 100, null), got);
                Assert.That(pages, Is.GreaterThan(4), "COUNT 100 over 3200 keys on several nodes: several pages");

                // TYPE
                using (var cur = ClusterScan.Cursor(c, prefix + "*", 50, "hash")) got = AllPages(cur, false, out pages, out cancelled);
                CollectionAssert.AreEquivalent(expectHashes, got);
                CollectionAssert.AreEquivalent(Sync(c, prefix + "*", 50, "hash"), got);

                // no filter: the whole keyspace, as the sync scan sees it
                using (var cur = ClusterScan.Cursor(c)) got = AllPages(cur, false, out pages, out cancelled);
                CollectionAssert.AreEquivalent(Sync(c, null, 0, null), got);
                CollectionAssert.IsSubsetOf(expectHashes, got);

                // pages cancelled on the way: the scan goes on (the core takes the interrupted node's pass up
                // again from its start: at least once, duplicates allowed and counted)
                using (var cur = ClusterScan.Cursor(c, prefix + "*", 100)) got = AllPages(cur, true, out pages, out cancelled);
                Console.WriteLine("{0}: {1} of {2} pages cancelled, {3} duplicates", where, cancelled, pages, got.Count - got.Distinct().Count());
                CollectionAssert.AreEquivalent(expectStrings.Concat(expectHashes), got.Distinct());

                // a pattern nothing matches: empty pages, then done
                using (var cur = ClusterScan.Cursor(c, prefix + "nothing:*")) got = AllPages(cur, false, out pages, out cancelled);
                Assert.That(got, Is.Empty);
            }
        }

        [Test]
        public void KeyByKeyWithMoveNextAsync()
        {
            string prefix = "csas:keys:";
            using (var c = SlotlaneClient.Connect(Servers.Bundled))
            {
                Fill(c, prefix);
                var got = new List<string>();
                using (ScanCursor cur = ClusterScan.Cursor(c, prefix + "*", 200).GetAsyncEnumerator())
                {
                    while (true)
                    {
                        Task<bool> t = cur.MoveNextAsync();
                        Assert.That(t.Wait(TimeSpan.FromSeconds(30)), Is.True, "MoveNextAsync did not complete");
                        if (!t.Result) break;
                        got.Add(Encoding.UTF8.GetString(cur.Current));
                    }
                    Assert.That(cur.IsDone, Is.True);
                    Assert.That(cur.MoveNextAsync().Result, Is.False);
                }
                Assert.That(got.Count, Is.EqualTo(Strings + Hashes));
                CollectionAssert.AreEquivalent(Sync(c, prefix + "*", 200, null), got);
            }
        }

        [Test]
        public void MisuseIsAClearError()
        {
            using (var c = SlotlaneClient.Connect(Servers.Bundled))
            {
                Assert.Throws<ArgumentNullException>(() => ClusterScan.Cursor(null));
                Assert.Throws<ArgumentException>(() => ClusterScan.Cursor(c, null, -1));
                Assert.Throws<ArgumentException>(() => ClusterScan.Cursor(c, ""));
                Assert.Throws<ArgumentException>(() => ClusterScan.Cursor(c, null, 0, "a\0b"));

                var cur = ClusterScan.Cursor(c, "csas:*", 10);
                Task<IReadOnlyList<byte[]>> first = cur.NextPageAsync();
                // one page at a time: refused while the first is in flight (unless it completed already)
                Task<IReadOnlyList<byte[]>> second = null;
                try { second = cur.NextPageAsync(); }
                catch (InvalidOperationException e) { StringAssert.Contains("in flight", e.Message); }
                Assert.That(first.Wait(TimeSpan.FromSeconds(30)), Is.True);
                if (second != null) Assert.That(second.Wait(TimeSpan.FromSeconds(30)), Is.True);
                Console.WriteLine("a second page while one was in flight: {0}", second == null ? "refused" : "the first had completed");
                // a token cancelled before the call: nothing is sent, the cursor stays usable
                var cts = new CancellationTokenSource();
                cts.Cancel();
                Task<IReadOnlyList<byte[]>> pre = cur.NextPageAsync(cts.Token);
                Assert.That(pre.IsCanceled, Is.True);
                Assert.That(cur.NextPageAsync().Wait(TimeSpan.FromSeconds(30)), Is.True);
                // disposed with a page in flight: the iterator is freed when the page completes
                Task<IReadOnlyList<byte[]>> last = cur.NextPageAsync();
                cur.Dispose();
                cur.Dispose();
                Assert.That(last.Wait(TimeSpan.FromSeconds(30)), Is.True);
                Assert.Throws<ObjectDisposedException>(() => cur.NextPageAsync());

                // a cursor left undisposed is freed with its client
                var forgotten = ClusterScan.Cursor(c, "csas:*", 10);
                Assert.That(forgotten.NextPageAsync().Wait(TimeSpan.FromSeconds(30)), Is.True);
                c.Dispose();
                Assert.Throws<ObjectDisposedException>(() => forgotten.NextPageAsync());
                forgotten.Dispose();
            }
        }
    }
}
