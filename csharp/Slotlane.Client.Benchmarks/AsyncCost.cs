// Slotlane.Client.Benchmarks --async-cost: the C# rows of the async-cost benchmark (bench/records/README.md,
// schema slotlane.bench.async-cost/1, as python/bench/async_cost.py and rust/bench/examples/async_cost.rs):
// N concurrent callers (N = 64 and 512; async methods started from one thread, resumed on the thread pool)
// each awaiting one GetAsync or SetAsync at a time, rows plain (ClientMode.Plain on one port of a
// slotlane-server with misrouted forward) and cluster (the cluster client over its 4 shards), keys
// key:0..4095 filled first with 32-byte values, every reply checked (GET: the key's value, SET: true).
// A fixed number of requests per row and round; getrusage(RUSAGE_SELF) around the timed part (the whole
// process: callers, the dispatcher and the core's loop thread); p50/p99 of the awaits; medians of rounds.
// Beside them, in the same run: the blocking Pipeline at depth 16 (one thread), for the issue's "async
// user CPU <= 1.5 x the sync pipeline at depth 16". No comparison client: StackExchange.Redis cannot be
// installed here (no NuGet), so the rows report figures only.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Slotlane.Benchmarks
{
    internal static class AsyncCost
    {
        sealed class RoundR
        {
            public long Requests, UserNs, SysNs, Wakeups, Completions;
            public double Wall, Load1, P50, P99;
        }

        sealed class RowR
        {
            public string Client, Row, Op, Error;
            public int Callers, Depth;
            public bool Ok = true;
            public List<RoundR> Rounds = new List<RoundR>();
        }

        static string plainUrl, clusterUrl, jsonPath, serverDesc, invocation;
        static int rounds = 3, requests = 65536, nkeys = 4096;
        static int[] callerCounts = { 64, 512 };
        static string[] keys;
        static byte[][] vals;
        static string[] valText;

        internal static int Run(string[] args)
        {
            for (int i = 0; i < args.Length; i++)
            {
                string a = args[i];
                Func<string> next = () =>
                {
                    if (i + 1 >= args.Length) throw new ArgumentException(a + " needs a value");
                    return args[++i];
                };
                switch (a)
                {
                    case "--async-cost": break;
                    case "--plain": plainUrl = next(); break;
                    case "--cluster": clusterUrl = next(); break;
                    case "--url": plainUrl = clusterUrl = next(); break;   // one slotlane-server with misrouted forward
                    case "--rounds": rounds = int.Parse(next()); break;
                    case "--requests": requests = int.Parse(next()); break;
                    case "--callers": callerCounts = next().Split(',').Select(int.Parse).ToArray(); break;
                    case "--json": jsonPath = next(); break;
                    case "--server-desc": serverDesc = next(); break;
                    case "--invocation": invocation = next(); break;
                    default: throw new ArgumentException("unknown option " + a);
                }
            }
            if (plainUrl == null || clusterUrl == null)
                throw new ArgumentException("--async-cost needs --plain URL and --cluster URL (or --url: one slotlane-server with misrouted forward)");
            if (rounds < 1 || requests < 1 || callerCounts.Any(n => n < 1)) throw new ArgumentException("bad numbers");
            keys = Enumerable.Range(0, nkeys).Select(k => "key:" + k).ToArray();
            vals = Enumerable.Range(0, nkeys).Select(Program.ValueOf).ToArray();
            valText = vals.Select(v => Encoding.UTF8.GetString(v)).ToArray();
            string started = DateTime.UtcNow.ToString("yyyy-MM-ddTHH:mm:ssZ");
            Program.Fill(new ClientOptions { Url = clusterUrl, Mode = ClientMode.Cluster }, keys, vals);
            if (plainUrl != clusterUrl) Program.Fill(new ClientOptions { Url = plainUrl, Mode = ClientMode.Plain }, keys, vals);
            ThreadPool.SetMinThreads(4, 4);

            var results = new List<RowR>();
            var syncRows = new List<RowR>();
            foreach (string row in new[] { "plain", "cluster" })
                foreach (string op in new[] { "GET", "SET" })
                {
                    foreach (int n in callerCounts) results.Add(new RowR { Client = "slotlane-csharp-async", Row = row, Op = op, Callers = n });
                    syncRows.Add(new RowR { Client = "slotlane-csharp-pipeline", Row = row, Op = op, Depth = 16, Callers = 1 });
                }
            // rounds outermost, rows interleaved in each: a load change on the shared machine hits every row alike
            for (int r = 0; r < rounds; r++)
            {
                foreach (var row in results.Where(x => x.Ok)) Measure(row, () => AsyncRound(row));
                foreach (var row in syncRows.Where(x => x.Ok)) Measure(row, () => SyncRound(row));
            }
            foreach (var row in results.Concat(syncRows))
                Console.Error.WriteLine("  {0,-25} {1,-7} {2} n{3,-4} {4}", row.Client, row.Row, row.Op, row.Callers,
                    row.Ok ? string.Format(CultureInfo.InvariantCulture, "cpu {0:F0} ns/req (user {1:F0}), {2:F0} req/s, p50 {3:F0} us, p99 {4:F0} us",
                        Med(row, x => (double)(x.UserNs + x.SysNs) / x.Requests), Med(row, x => (double)x.UserNs / x.Requests),
                        Med(row, x => x.Requests / x.Wall), Med(row, x => x.P50), Med(row, x => x.P99))
                    : "FAILED: " + row.Error);
            if (jsonPath != null) Write(results, syncRows, started, args);
            return results.Concat(syncRows).All(x => x.Ok) ? 0 : 1;
        }

        static void Measure(RowR row, Func<RoundR> f)
        {
            try { row.Rounds.Add(f()); }
            catch (Exception e)
            {
                row.Ok = false;
                row.Error = e.GetType().Name + ": " + (e is AggregateException ? e.InnerException.Message : e.Message);
            }
        }

        static ClientOptions Opts(string row)
        {
            return new ClientOptions { Url = row == "plain" ? plainUrl : clusterUrl, Mode = row == "plain" ? ClientMode.Plain : ClientMode.Cluster, CommandTimeout = TimeSpan.FromSeconds(10) };
        }

        // One caller: `count` awaits in turn, each checked; its latencies (Stopwatch ticks) into lat[from..].
        static async Task Caller(SlotlaneClient c, bool get, int seed, int count, long[] lat, int from)
        {
            int k = seed;
            for (int i = 0; i < count; i++)
            {
                k = (k * 1103515245 + 12345) & 0x7fffffff;
                int idx = k % nkeys;
                long t0 = Stopwatch.GetTimestamp();
                if (get)
                {
                    string v = await c.GetAsync(keys[idx]);
                    if (v != valText[idx]) throw new InvalidOperationException("GET " + keys[idx] + ": wrong value " + (v ?? "(nil)"));
                }
                else if (!await c.SetAsync(keys[idx], vals[idx])) throw new InvalidOperationException("SET " + keys[idx] + ": not OK");
                lat[from + i] = Stopwatch.GetTimestamp() - t0;
            }
        }

        static RoundR AsyncRound(RowR row)
        {
            using (var c = SlotlaneClient.Connect(Opts(row.Row)))
            {
                bool get = row.Op == "GET";
                int n = row.Callers, per = requests / n, total = per * n;
                // warm up: the async engine connects, the JIT compiles, the batch pool fills
                Task.WaitAll(Enumerable.Range(0, n).Select(i => Caller(c, get, i + 1, 4, new long[4], 0)).ToArray());
                var lat = new long[total];
                var rd = new RoundR { Requests = total, Load1 = Program.LoadAvg1() };
                long w0 = Interlocked.Read(ref AsyncEngine.Wakeups), c0 = Interlocked.Read(ref AsyncEngine.Completions);
                long u0, y0;
                LibC.Cpu(out u0, out y0);
                var clock = Stopwatch.StartNew();
                var tasks = new Task[n];
                for (int i = 0; i < n; i++) tasks[i] = Caller(c, get, 7919 * (i + 1), per, lat, i * per);
                Task.WaitAll(tasks);
                rd.Wall = clock.Elapsed.TotalSeconds;
                long u1, y1;
                LibC.Cpu(out u1, out y1);
                rd.UserNs = u1 - u0;
                rd.SysNs = y1 - y0;
                rd.Wakeups = Interlocked.Read(ref AsyncEngine.Wakeups) - w0;
                rd.Completions = Interlocked.Read(ref AsyncEngine.Completions) - c0;
                Array.Sort(lat);
                double us = 1e6 / Stopwatch.Frequency;
                rd.P50 = lat[total / 2] * us;
                rd.P99 = lat[(int)(total * 0.99)] * us;
                return rd;
            }
        }

        // The blocking pipeline at depth 16, one thread, the same keys and checks.
        static RoundR SyncRound(RowR row)
        {
            using (var c = SlotlaneClient.Connect(Opts(row.Row)))
            using (var p = c.CreatePipeline())
            {
                bool get = row.Op == "GET";
                int depth = row.Depth, batches = requests / depth;
                var rd = new RoundR { Requests = (long)batches * depth, Load1 = Program.LoadAvg1() };
                var idx = new int[depth];
                int k = 12345;
                Func<int, long> one = nb =>
                {
                    long t0 = Stopwatch.GetTimestamp();
                    for (int b = 0; b < nb; b++)
                    {
                        for (int j = 0; j < depth; j++)
                        {
                            k = (k * 1103515245 + 12345) & 0x7fffffff;
                            idx[j] = k % nkeys;
                            if (get) p.Get(keys[idx[j]]); else p.Set(keys[idx[j]], vals[idx[j]]);
                        }
                        object[] r = p.Execute();
                        for (int j = 0; j < depth; j++)
                        {
                            bool ok = get ? r[j] is byte[] && Program.Same((byte[])r[j], vals[idx[j]]) : "OK".Equals(r[j]);
                            if (!ok) throw new InvalidOperationException(row.Op + " " + keys[idx[j]] + ": wrong reply");
                        }
                    }
                    return Stopwatch.GetTimestamp() - t0;
                };
                one(16);
                long u0, y0;
                LibC.Cpu(out u0, out y0);
                var clock = Stopwatch.StartNew();
                one(batches);
                rd.Wall = clock.Elapsed.TotalSeconds;
                long u1, y1;
                LibC.Cpu(out u1, out y1);
                rd.UserNs = u1 - u0;
                rd.SysNs = y1 - y0;
                rd.P50 = rd.P99 = double.NaN;
                return rd;
            }
        }

        static double Med(RowR row, Func<RoundR, double> f)
        {
            var xs = row.Rounds.Select(f).Where(x => !double.IsNaN(x)).OrderBy(x => x).ToArray();
            if (xs.Length == 0) return double.NaN;
            return xs.Length % 2 == 1 ? xs[xs.Length / 2] : (xs[xs.Length / 2 - 1] + xs[xs.Length / 2]) / 2;
        }

        static string Median(RowR r)
        {
            if (!r.Ok || r.Rounds.Count == 0) return "null";
            return "{\"cpu_ns_per_req\": " + Program.N(Med(r, x => (double)(x.UserNs + x.SysNs) / x.Requests)) +
                   ", \"user_ns_per_req\": " + Program.N(Med(r, x => (double)x.UserNs / x.Requests)) +
                   ", \"sys_ns_per_req\": " + Program.N(Med(r, x => (double)x.SysNs / x.Requests)) +
                   ", \"req_per_s\": " + Program.N(Med(r, x => x.Requests / x.Wall)) +
                   ", \"p50_us\": " + Program.N(Med(r, x => x.P50)) + ", \"p99_us\": " + Program.N(Med(r, x => x.P99)) +
                   ", \"completions_per_wakeup\": " + Program.N(Med(r, x => x.Wakeups > 0 ? (double)x.Completions / x.Wakeups : double.NaN)) + "}";
        }

        static string Rows(IEnumerable<RowR> rows)
        {
            return string.Join(",\n", rows.Select(r =>
                "    {\"client\": " + Program.J(r.Client) + ", \"row\": " + Program.J(r.Row) + ", \"op\": " + Program.J(r.Op) + ", \"callers\": " + r.Callers +
                (r.Depth > 0 ? ", \"depth\": " + r.Depth : "") + ", \"ok\": " + (r.Ok ? "true" : "false") + ", \"error\": " + Program.J(r.Error) +
                ",\n     \"rounds\": [" + string.Join(", ", r.Rounds.Select(x =>
                    "{\"requests\": " + x.Requests + ", \"wall_s\": " + Program.N(x.Wall) + ", \"user_ns_per_req\": " + Program.N((double)x.UserNs / x.Requests) +
                    ", \"sys_ns_per_req\": " + Program.N((double)x.SysNs / x.Requests) + ", \"cpu_ns_per_req\": " + Program.N((double)(x.UserNs + x.SysNs) / x.Requests) +
                    ", \"req_per_s\": " + Program.N(x.Requests / x.Wall) + ", \"p50_us\": " + Program.N(x.P50) + ", \"p99_us\": " + Program.N(x.P99) +
                    ", \"completions\": " + x.Completions + ", \"wakeups\": " + x.Wakeups + ", \"load1\": " + Program.N(x.Load1) + "}")) +
                "],\n     \"median\": " + Median(r) + "}"));
        }

        static void Write(List<RowR> results, List<RowR> syncRows, string started, string[] args)
        {
            var sb = new StringBuilder("{\n");
            sb.Append("  \"schema\": \"slotlane.bench.async-cost/1\",\n  \"benchmark\": \"async-cost\",\n");
            sb.Append("  \"tool\": \"csharp/Slotlane.Client.Benchmarks --async-cost\",\n");
            sb.Append("  \"ok\": " + (results.Concat(syncRows).All(r => r.Ok) ? "true" : "false") + ",\n");
            sb.Append("  \"started_at\": " + Program.J(started) + ", \"finished_at\": " + Program.J(DateTime.UtcNow.ToString("yyyy-MM-ddTHH:mm:ssZ")) + ",\n");
            sb.Append("  \"machine\": " + Program.MachineJson() + ",\n");
            sb.Append("  \"versions\": " + Program.VersionsJson() + ",\n");
            sb.Append("  \"git\": " + Program.GitJson() + ",\n");
            sb.Append("  \"command\": [" + string.Join(", ", new[] { "Slotlane.Client.Benchmarks.exe" }.Concat(args).Select(Program.J)) + "],\n");
            sb.Append("  \"invocation\": " + Program.J(invocation) + ",\n");
            sb.Append("  \"servers\": {\"description\": " + Program.J(serverDesc) + ", \"plain\": {\"url\": " + Program.J(plainUrl) + "}, \"cluster\": {\"url\": " + Program.J(clusterUrl) + "}},\n");
            sb.Append("  \"config\": {\"keys\": " + nkeys + ", \"value_bytes\": 32, \"requests_per_round\": " + requests + ", \"rounds\": " + rounds +
                      ", \"callers\": [" + string.Join(", ", callerCounts) + "], \"api\": \"SlotlaneClient.GetAsync/SetAsync (typed, rendered), one client per row and round\"" +
                      ", \"comparison\": \"none: StackExchange.Redis is not installable here (no NuGet)\"},\n");
            sb.Append("  \"load_note\": \"a shared 2-core machine (other engineers' builds and tests run on it): see rounds[].load1\",\n");
            sb.Append("  \"rows\": [\n" + Rows(results) + "\n  ],\n");
            sb.Append("  \"sync_rows\": [\n" + Rows(syncRows) + "\n  ],\n");
            var targets = new List<string>();
            foreach (var r in results.Where(x => x.Ok))
            {
                var s = syncRows.FirstOrDefault(x => x.Ok && x.Row == r.Row && x.Op == r.Op);
                if (s == null) continue;
                double v = Med(r, x => (double)x.UserNs / x.Requests) / Med(s, x => (double)x.UserNs / x.Requests);
                targets.Add("    {\"name\": \"async user CPU/req <= 1.5 x the sync pipeline at depth 16\", \"row\": " + Program.J(r.Row) + ", \"op\": " + Program.J(r.Op) +
                            ", \"callers\": " + r.Callers + ", \"value\": " + Program.N(v) + ", \"limit\": 1.5, \"met\": " + (v <= 1.5 ? "true" : "false") + "}");
            }
            sb.Append("  \"targets\": [\n" + string.Join(",\n", targets) + "\n  ]\n}\n");
            Program.WriteNamed(jsonPath, sb.ToString(), "async-cost-csharp");
        }
    }
}
