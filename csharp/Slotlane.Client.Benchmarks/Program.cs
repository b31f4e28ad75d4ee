// Slotlane.Client.Benchmarks --cluster-cost: the C# cluster-cost tool of DESIGN.md ("The benchmarks"),
// with the method of bench/cluster-cost/cluster_cost.c so that its rows compare with the C tool's:
//   rows plain (ClientMode.Plain, one node), cluster (keys key:0..N-1 over every shard), one-node
//   (cluster client, keys {t}:key:N) x GET/SET x depths 16 and 64; 32-byte values that depend on
//   the key (filled first); W worker threads; warmup, then a barrier, getrusage(RUSAGE_SELF) and the
//   clock around the timed loop of every worker; every reply checked (GET: the key's value, SET: OK),
//   a wrong or error reply fails the row (no figure); rounds and medians; one JSON record
//   (schema slotlane.bench.cluster-cost/1, bench/records/README.md) with every round.
// What the C# rows measure is the binding as users call it: ONE SlotlaneClient shared by the
// workers (its pool of core handles), a Pipeline per worker, Pipeline.Get/Set (RESP encoded in C#
// into the pipeline's unmanaged buffer), Execute() (one sl_batch_run crossing, records copied into
// the handle's unmanaged arena, decoded into byte[]/string/long objects) — where the C tool
// pre-encodes every pipeline once and reads the records in place.
// --compare FILE: a C tool record of the same servers; every row gets x_c_tool (C# user CPU over the
// C tool's, medians) and the targets are evaluated.
// --tls-ca FILE: every client (the rows' and the fill's) speaks TLS to --plain and --cluster (TLS ports
// given as redis:// URLs), trusting that CA with full verification: ClientOptions.Tls = new TlsOptions
// { CaFile = FILE } (the core's OpenSSL); the record's config then holds "tls" (bench/tls/run.py).
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Runtime.InteropServices;
using System.Text;
using System.Text.RegularExpressions;
using System.Threading;

namespace Slotlane.Benchmarks
{
    internal static class LibC
    {
        [StructLayout(LayoutKind.Sequential)]
        internal struct RUsage
        {
            public long utime_sec, utime_usec, stime_sec, stime_usec;
            public long maxrss, ixrss, idrss, isrss, minflt, majflt, nswap, inblock, oublock, msgsnd, msgrcv, nsignals, nvcsw, nivcsw;
        }

        [DllImport("libc", SetLastError = true)]
        internal static extern int getrusage(int who, out RUsage usage);

        [DllImport("libc", SetLastError = true)]
        internal static extern int link(string oldpath, string newpath);

        internal static void Cpu(out long userNs, out long sysNs)
        {
            RUsage u;
            if (getrusage(0, out u) != 0) throw new InvalidOperationException("getrusage failed");
            userNs = u.utime_sec * 1000000000L + u.utime_usec * 1000L;
            sysNs = u.stime_sec * 1000000000L + u.stime_usec * 1000L;
        }
    }

    internal sealed class Round
    {
        public long Requests, Pipelines, UserNs, SysNs, BytesWritten, Payload, Moved, Ask, TryAgain, Refreshes, Connects, Reconnects;
        public double Wall, Load1; // Load1: the 1-minute load average at the start (the machine is shared)
    }

    internal sealed class Row
    {
        public string Kind, Op;
        public int Depth;
        public bool Ok = true;
        public string Error;
        public List<Round> Rounds = new List<Round>();
        public Dictionary<string, double> Median = new Dictionary<string, double>();
        public double? XPlain, XC, CUser;
    }

    internal static class Program
    {
        const int ValueLen = 32;
        static string plainUrl, clusterUrl, jsonPath, serverDesc, invocation, comparePath, tlsCa;
        static List<string> rows = new List<string> { "plain", "cluster", "one-node" };
        static List<string> ops = new List<string> { "GET", "SET" };
        static List<int> depths = new List<int> { 16, 64 };
        static double seconds = 8, warmup = 1;
        static int rounds = 3, workers = 8, nkeys = 4096;
        static bool quick;
        static string[][] keys = new string[2][];
        static byte[][] vals;

        static int Main(string[] args)
        {
            try { return args.Length > 0 && args[0] == "--async-cost" ? AsyncCost.Run(args) : Run(args); }
            catch (ArgumentException e)
            {
                Console.Error.WriteLine("cluster-cost: " + e.Message);
                Usage();
                return 2;
            }
        }

        static void Usage()
        {
            Console.Error.WriteLine(@"usage: Slotlane.Client.Benchmarks --cluster-cost [--plain URL] [--cluster URL] [options]
  --rows LIST       plain,cluster,one-node (default: all that have a URL)
  --ops LIST        GET,SET          --depths LIST  16,64
  --seconds S       timed loop per row and round (default 8; --quick 1)
  --warmup S        (default 1; --quick 0.3)     --rounds R (default 3)
  --workers W       threads sharing one client (default 8)    --keys N (default 4096)
  --no-fill         keys hold their values already
  --json PATH       a file, or DIR/ for an auto-named record
  --compare FILE    the C tool's record of the same servers: adds x_c_tool and the targets
  --tls-ca FILE     every client over TLS (TlsOptions.CaFile = FILE, full verification)
  --server-desc TXT --invocation TXT");
        }

        static int Run(string[] args)
        {
            bool mode = false, fill = true;
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
                    case "--cluster-cost": mode = true; break;
                    case "--plain": plainUrl = next(); break;
                    case "--cluster": clusterUrl = next(); break;
                    case "--rows": rows = next().Split(',').ToList(); break;
                    case "--ops": ops = next().Split(',').Select(s => s.ToUpperInvariant()).ToList(); break;
                    case "--depths": depths = next().Split(',').Select(int.Parse).ToList(); break;
                    case "--seconds": seconds = double.Parse(next(), CultureInfo.InvariantCulture); break;
                    case "--warmup": warmup = double.Parse(next(), CultureInfo.InvariantCulture); break;
                    case "--rounds": rounds = int.Parse(next()); break;
                    case "--workers": workers = int.Parse(next()); break;
                    case "--keys": nkeys = int.Parse(next()); break;
                    case "--json": jsonPath = next(); break;
                    case "--compare": comparePath = next(); break;
                    case "--server-desc": serverDesc = next(); break;
                    case "--invocation": invocation = next(); break;
                    case "--tls-ca": tlsCa = next(); break;
                    case "--no-fill": fill = false; break;
                    case "--quick": quick = true; seconds = 1; warmup = 0.3; break;
                    case "-h": case "--help": Usage(); return 0;
                    default: throw new ArgumentException("unknown option " + a);
                }
            }
            if (!mode) throw new ArgumentException("give --cluster-cost (the one mode of this tool)");
            if (plainUrl == null) rows.Remove("plain");
            if (clusterUrl == null) { rows.Remove("cluster"); rows.Remove("one-node"); }
            if (rows.Count == 0) throw new ArgumentException("no rows: give --plain and/or --cluster");
            if (rows.Any(r => r != "plain" && r != "cluster" && r != "one-node")) throw new ArgumentException("bad --rows");
            if (ops.Any(o => o != "GET" && o != "SET")) throw new ArgumentException("bad --ops");
            if (workers < 1 || rounds < 1 || nkeys < 1 || seconds <= 0) throw new ArgumentException("bad numbers");
            if (tlsCa != null && !File.Exists(tlsCa)) throw new ArgumentException("--tls-ca " + tlsCa + ": no such file");

            keys[0] = Enumerable.Range(0, nkeys).Select(k => "key:" + k).ToArray();
            keys[1] = Enumerable.Range(0, nkeys).Select(k => "{t}:key:" + k).ToArray();
            vals = Enumerable.Range(0, nkeys).Select(ValueOf).ToArray();
            string started = DateTime.UtcNow.ToString("yyyy-MM-ddTHH:mm:ssZ");

            if (fill)
            {
                if (plainUrl != null) Fill(new ClientOptions { Url = plainUrl, Mode = ClientMode.Plain, Tls = TlsOpts() }, 0);
                if (clusterUrl != null)
                {
                    Fill(new ClientOptions { Url = clusterUrl, Mode = ClientMode.Cluster, Tls = TlsOpts() }, 0);
                    Fill(new ClientOptions { Url = clusterUrl, Mode = ClientMode.Cluster, Tls = TlsOpts() }, 1);
                }
            }

            var results = new List<Row>();
            foreach (string kind in new[] { "plain", "cluster", "one-node" }.Where(rows.Contains))
                foreach (string op in new[] { "GET", "SET" }.Where(ops.Contains))
                    foreach (int depth in depths)
                    {
                        var row = new Row { Kind = kind, Op = op, Depth = depth };
                        RunRow(row);
                        results.Add(row);
                        Console.Error.WriteLine("  {0,-9} {1} d{2,-3} {3}", kind, op, depth,
                            row.Ok ? string.Format(CultureInfo.InvariantCulture, "user {0:F0} ns/req, sys {1:F0} ns/req, {2:F1} B/req, {3:F0} req/s",
                                row.Median["user_ns_per_req"], row.Median["sys_ns_per_req"], row.Median["bytes_per_req"], row.Median["req_per_s"])
                            : "FAILED: " + row.Error);
                    }
            foreach (var r in results.Where(x => x.Ok))
            {
                var p = results.FirstOrDefault(x => x.Kind == "plain" && x.Op == r.Op && x.Depth == r.Depth && x.Ok);
                if (p != null) r.XPlain = r.Median["user_ns_per_req"] / p.Median["user_ns_per_req"];
            }
            if (comparePath != null) Compare(results);
            PrintTable(results);
            if (jsonPath != null) WriteRecord(results, started, args);
            return results.All(r => r.Ok) ? 0 : 1;
        }

        internal static byte[] ValueOf(int idx)
        {
            // as value_of() in cluster_cost.c: "v0001234:" + letters
            var b = new byte[ValueLen];
            string head = "v" + idx.ToString("D7", CultureInfo.InvariantCulture) + ":";
            for (int i = 0; i < head.Length; i++) b[i] = (byte)head[i];
            for (int i = head.Length; i < ValueLen; i++) b[i] = (byte)('a' + (idx * 7 + i * 3) % 26);
            return b;
        }

        static void Fill(ClientOptions o, int keyset) { Fill(o, keys[keyset], vals); }

        /// <summary>The clients' TLS: --tls-ca's CA with full verification, or null (plaintext).</summary>
        static TlsOptions TlsOpts() { return tlsCa == null ? null : new TlsOptions { CaFile = tlsCa }; }

        internal static void Fill(ClientOptions o, string[] ks, byte[][] vs)
        {
            using (var c = SlotlaneClient.Connect(o))
            using (var p = c.CreatePipeline())
            {
                for (int k = 0; k < ks.Length; k++)
                {
                    p.Set(ks[k], vs[k]);
                    if (p.Count == 256 || k == ks.Length - 1) p.ExecuteOrThrow();
                }
            }
        }

        sealed class Shared
        {
            public volatile bool Stop;
            public volatile string Fail;
            public Barrier Start, Done;
        }

        static void RunRow(Row row)
        {
            bool plain = row.Kind == "plain";
            int keyset = row.Kind == "one-node" ? 1 : 0;
            var opts = new ClientOptions
            {
                Url = plain ? plainUrl : clusterUrl,
                Mode = plain ? ClientMode.Plain : ClientMode.Cluster,
                CommandTimeout = TimeSpan.FromSeconds(10),
                MaxPoolSize = workers,
                Tls = TlsOpts(),
            };
            try
            {
                using (var client = SlotlaneClient.Connect(opts))
                {
                    for (int round = 0; round < rounds; round++)
                    {
                        var sh = new Shared { Start = new Barrier(workers + 1), Done = new Barrier(workers + 1) };
                        var counts = new long[workers, 3];   // requests, pipelines, payload bytes
                        var threads = new Thread[workers];
                        bool warm = true;
                        for (int w = 0; w < workers; w++)
                        {
                            int wid = w;
                            threads[w] = new Thread(() => Worker(client, row, keyset, wid, sh, counts, () => warm)) { IsBackground = true };
                            threads[w].Start();
                        }
                        Thread.Sleep(TimeSpan.FromSeconds(warmup));
                        warm = false;
                        sh.Start.SignalAndWait();          // workers finished warming up and wait here
                        // every worker is idle: counters and CPU are taken with no pipeline running
                        ClientStats s0 = client.GetStats();
                        double load1 = LoadAvg1();
                        long u0, y0;
                        LibC.Cpu(out u0, out y0);
                        var clock = Stopwatch.StartNew();
                        sh.Start.SignalAndWait();          // release the timed loop
                        Thread.Sleep(TimeSpan.FromSeconds(seconds));
                        sh.Stop = true;
                        sh.Done.SignalAndWait();           // every worker finished its last pipeline
                        long u1, y1;
                        LibC.Cpu(out u1, out y1);
                        double wall = clock.Elapsed.TotalSeconds;
                        ClientStats s1 = client.GetStats();
                        foreach (var t in threads) t.Join();
                        if (sh.Fail != null) { row.Ok = false; row.Error = sh.Fail; break; }
                        var rd = new Round { Wall = wall, UserNs = u1 - u0, SysNs = y1 - y0, Load1 = load1 };
                        for (int w = 0; w < workers; w++) { rd.Requests += counts[w, 0]; rd.Pipelines += counts[w, 1]; rd.Payload += counts[w, 2]; }
                        rd.BytesWritten = s1.BytesWritten - s0.BytesWritten;
                        rd.Moved = s1.Moved - s0.Moved; rd.Ask = s1.Ask - s0.Ask; rd.TryAgain = s1.TryAgain - s0.TryAgain;
                        rd.Refreshes = s1.Refreshes - s0.Refreshes; rd.Connects = s1.Connects - s0.Connects; rd.Reconnects = s1.Reconnects - s0.Reconnects;
                        if (rd.Requests == 0) { row.Ok = false; row.Error = "no request completed"; break; }
                        row.Rounds.Add(rd);
                    }
                }
            }
            catch (Exception e) { row.Ok = false; row.Error = e.GetType().Name + ": " + e.Message; }
            if (!row.Ok) return;
            Func<Func<Round, double>, double> med = f =>
            {
                var xs = row.Rounds.Select(f).OrderBy(x => x).ToArray();
                return xs.Length % 2 == 1 ? xs[xs.Length / 2] : (xs[xs.Length / 2 - 1] + xs[xs.Length / 2]) / 2;
            };
            row.Median["user_ns_per_req"] = med(r => (double)r.UserNs / r.Requests);
            row.Median["cpu_ns_per_req"] = med(r => (double)(r.UserNs + r.SysNs) / r.Requests);
            row.Median["sys_ns_per_req"] = med(r => (double)r.SysNs / r.Requests);
            row.Median["bytes_per_req"] = med(r => (double)r.BytesWritten / r.Requests);
            row.Median["payload_bytes_per_req"] = med(r => (double)r.Payload / r.Requests);
            row.Median["extra_bytes_per_req"] = med(r => (double)(r.BytesWritten - r.Payload) / r.Requests);
            row.Median["req_per_s"] = med(r => r.Requests / r.Wall);
        }

        /// <summary>The 1-minute load average (/proc/loadavg), -1 when unreadable.</summary>
        internal static double LoadAvg1()
        {
            try
            {
                return double.Parse(File.ReadAllText("/proc/loadavg").Split(' ')[0], CultureInfo.InvariantCulture);
            }
            catch (Exception)
            {
                return -1;
            }
        }

        static void Worker(SlotlaneClient client, Row row, int keyset, int wid, Shared sh, long[,] counts, Func<bool> warming)
        {
            int depth = row.Depth, start = (int)((long)wid * nkeys / workers);
            bool get = row.Op == "GET";
            string[] ks = keys[keyset];
            long p = 0;
            bool timed = false;
            long reqs = 0, pipes = 0, payload = 0;
            // the payload (the minimal RESP of the commands) of one pipeline, computed once per key
            var cmdBytes = new int[nkeys];
            for (int k = 0; k < nkeys; k++)
            {
                int kl = Encoding.UTF8.GetByteCount(ks[k]);
                cmdBytes[k] = get ? 4 + 9 + (1 + Digits(kl) + 2) + kl + 2
                                  : 4 + 9 + (1 + Digits(kl) + 2) + kl + 2 + (1 + Digits(ValueLen) + 2) + ValueLen + 2;
            }
            try
            {
                using (var pl = client.CreatePipeline())
                {
                    while (true)
                    {
                        if (!timed && !warming())
                        {
                            sh.Start.SignalAndWait();      // end of warmup
                            sh.Start.SignalAndWait();      // start of the timed loop
                            timed = true;
                        }
                        else if (timed && sh.Stop) break;
                        int first = (int)((start + p * depth) % nkeys);
                        for (int j = 0; j < depth; j++)
                        {
                            int k = (first + j) % nkeys;
                            if (get) pl.Get(ks[k]); else pl.Set(ks[k], vals[k]);
                        }
                        object[] r = pl.Execute();
                        for (int j = 0; j < depth; j++)
                        {
                            int k = (first + j) % nkeys;
                            object o = r[j];
                            if (get)
                            {
                                var b = o as byte[];
                                if (b == null || !Same(b, vals[k])) { Fail(sh, "GET " + ks[k] + ": wrong reply " + Show(o)); goto done; }
                            }
                            else if (!"OK".Equals(o)) { Fail(sh, "SET " + ks[k] + ": wrong reply " + Show(o)); goto done; }
                            if (timed) payload += cmdBytes[k];
                        }
                        if (timed) { reqs += depth; pipes++; }
                        p++;
                    }
                }
            }
            catch (Exception e) { Fail(sh, e.GetType().Name + ": " + e.Message); }
            done:
            counts[wid, 0] = reqs;
            counts[wid, 1] = pipes;
            counts[wid, 2] = payload;
            if (!timed)
            {
                // failed during warmup: still meet the barriers the main thread waits at
                sh.Start.SignalAndWait();
                sh.Start.SignalAndWait();
            }
            sh.Done.SignalAndWait();
        }

        static int Digits(int n) { return n.ToString(CultureInfo.InvariantCulture).Length; }

        // as the C tool's memcmp: 8 bytes at a time
        internal static unsafe bool Same(byte[] a, byte[] b)
        {
            int n = a.Length;
            if (n != b.Length) return false;
            fixed (byte* pa = a, pb = b)
            {
                int i = 0;
                for (; i + 8 <= n; i += 8) if (*(long*)(pa + i) != *(long*)(pb + i)) return false;
                for (; i < n; i++) if (pa[i] != pb[i]) return false;
            }
            return true;
        }

        static void Fail(Shared sh, string msg) { if (sh.Fail == null) sh.Fail = msg; sh.Stop = true; }

        static string Show(object o)
        {
            if (o == null) return "nil";
            var b = o as byte[];
            if (b != null) return "\"" + Encoding.UTF8.GetString(b) + "\"";
            var e = o as Exception;
            if (e != null) return e.GetType().Name + ": " + e.Message;
            return o.ToString();
        }

        // ------------------------------------------------------------ the C tool's record

        static void Compare(List<Row> results)
        {
            string json = File.ReadAllText(comparePath);
            // rows of the C tool: {"client": "slotlane", "api": "resp", "row": "...", "op": "...", "depth": N, ... "median": {"user_ns_per_req": X
            foreach (Match m in Regex.Matches(json, "\\{\"client\":\\s*\"slotlane\",\\s*\"api\":\\s*\"resp\",\\s*\"row\":\\s*\"([a-z-]+)\",\\s*\"op\":\\s*\"(GET|SET)\",\\s*\"depth\":\\s*(\\d+)(.*?)\"median\":\\s*\\{\"user_ns_per_req\":\\s*([0-9.eE+-]+)", RegexOptions.Singleline))
            {
                var r = results.FirstOrDefault(x => x.Kind == m.Groups[1].Value && x.Op == m.Groups[2].Value && x.Depth == int.Parse(m.Groups[3].Value));
                if (r == null || !r.Ok) continue;
                r.CUser = double.Parse(m.Groups[5].Value, CultureInfo.InvariantCulture);
                r.XC = r.Median["user_ns_per_req"] / r.CUser.Value;
            }
        }

        static void PrintTable(List<Row> results)
        {
            Console.WriteLine();
            Console.WriteLine("| row | op | depth | C# user ns/req | C tool user ns/req | x C tool | x plain | sys ns/req | bytes/req | req/s |");
            Console.WriteLine("|---|---|---|---|---|---|---|---|---|---|");
            foreach (var r in results)
            {
                if (!r.Ok) { Console.WriteLine("| {0} | {1} | {2} | FAILED: {3} |", r.Kind, r.Op, r.Depth, r.Error); continue; }
                Console.WriteLine(string.Format(CultureInfo.InvariantCulture, "| {0} | {1} | {2} | {3:F0} | {4} | {5} | {6} | {7:F0} | {8:F1} | {9:F0} |",
                    r.Kind, r.Op, r.Depth, r.Median["user_ns_per_req"], r.CUser.HasValue ? r.CUser.Value.ToString("F0", CultureInfo.InvariantCulture) : "-",
                    r.XC.HasValue ? r.XC.Value.ToString("F2", CultureInfo.InvariantCulture) : "-",
                    r.XPlain.HasValue ? r.XPlain.Value.ToString("F2", CultureInfo.InvariantCulture) : "-",
                    r.Median["sys_ns_per_req"], r.Median["bytes_per_req"], r.Median["req_per_s"]));
            }
        }

        // ------------------------------------------------------------ the JSON record

        internal static string J(string s)
        {
            if (s == null) return "null";
            var sb = new StringBuilder("\"");
            foreach (char c in s)
            {
                if (c == '"' || c == '\\') sb.Append('\\').Append(c);
                else if (c < 0x20) sb.AppendFormat("\\u{0:x4}", (int)c);
                else sb.Append(c);
            }
            return sb.Append('"').ToString();
        }

        internal static string N(double d) { return double.IsNaN(d) || double.IsInfinity(d) ? "null" : d.ToString("R", CultureInfo.InvariantCulture); }

        static string Sh(string cmd, string args)
        {
            try
            {
                var psi = new ProcessStartInfo(cmd, args) { UseShellExecute = false, RedirectStandardOutput = true, RedirectStandardError = true };
                using (var p = Process.Start(psi))
                {
                    string o = p.StandardOutput.ReadToEnd().Trim();
                    p.WaitForExit();
                    return p.ExitCode == 0 ? o : null;
                }
            }
            catch { return null; }
        }

        internal static string MachineJson()
        {
            string cpu = File.ReadAllLines("/proc/cpuinfo").Where(l => l.StartsWith("model name")).Select(l => l.Substring(l.IndexOf(':') + 1).Trim()).FirstOrDefault();
            string affinity = Sh("taskset", "-pc " + Process.GetCurrentProcess().Id);
            if (affinity != null) affinity = affinity.Substring(affinity.LastIndexOf(':') + 1).Trim();
            return "{\"hostname\": " + J(Environment.MachineName) + ", \"cpu_model\": " + J(cpu) + ", \"cores\": " + Environment.ProcessorCount +
                   ", \"kernel\": " + J(Sh("uname", "-r")) + ", \"client_cpus\": " + J(affinity) + "}";
        }

        internal static string VersionsJson()
        {
            string mono = Type.GetType("Mono.Runtime") != null
                ? (string)Type.GetType("Mono.Runtime").GetMethod("GetDisplayName", System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Static).Invoke(null, null)
                : null;
            return "{\"slotlane\": " + J(SlotlaneClient.CoreVersion) + ", \"runtime\": " + J(mono != null ? "Mono " + mono : Environment.Version.ToString()) +
                   ", \"compiler\": \"mcs -langversion:7.2 -optimize+\", \"hiredis\": null}";
        }

        internal static string GitJson()
        {
            string root = Path.GetFullPath(Path.Combine(AppDomain.CurrentDomain.BaseDirectory, "..", "..", ".."));
            string commit = Sh("git", "-C " + root + " rev-parse HEAD") ?? "unknown";
            string status = Sh("git", "-C " + root + " status --porcelain");
            return "{\"commit\": " + J(commit) + ", \"dirty\": " + (status == null ? "null" : status.Length > 0 ? "true" : "false") + "}";
        }

        static void WriteRecord(List<Row> results, string started, string[] args)
        {
            var sb = new StringBuilder();
            sb.Append("{\n");
            sb.Append("  \"schema\": \"slotlane.bench.cluster-cost/1\",\n  \"benchmark\": \"cluster-cost\",\n");
            sb.Append("  \"tool\": \"csharp/Slotlane.Client.Benchmarks --cluster-cost\",\n");
            sb.Append("  \"ok\": " + (results.All(r => r.Ok) ? "true" : "false") + ",\n");
            sb.Append("  \"started_at\": " + J(started) + ", \"finished_at\": " + J(DateTime.UtcNow.ToString("yyyy-MM-ddTHH:mm:ssZ")) + ",\n");
            sb.Append("  \"machine\": " + MachineJson() + ",\n");
            sb.Append("  \"versions\": " + VersionsJson() + ",\n");
            sb.Append("  \"git\": " + GitJson() + ",\n");
            sb.Append("  \"command\": [" + string.Join(", ", new[] { "Slotlane.Client.Benchmarks.exe" }.Concat(args).Select(J)) + "],\n");
            sb.Append("  \"invocation\": " + J(invocation) + ",\n");
            sb.Append("  \"servers\": {\"description\": " + J(serverDesc) + ", \"plain\": " + (plainUrl == null ? "null" : "{\"url\": " + J(plainUrl) + "}") +
                      ", \"cluster\": " + (clusterUrl == null ? "null" : "{\"url\": " + J(clusterUrl) + "}") + "},\n");
            sb.Append("  \"config\": {\"workers\": " + workers + ", \"seconds\": " + N(seconds) + ", \"warmup_seconds\": " + N(warmup) + ", \"rounds\": " + rounds +
                      ", \"keys\": " + nkeys + ", \"value_bytes\": " + ValueLen + ", \"api\": \"csharp-pipeline\", \"client_sharing\": \"one SlotlaneClient shared by the workers (pool of core handles), a Pipeline per worker\"" +
                      ", \"timeout_ms\": 10000, \"quick\": " + (quick ? "true" : "false") + ", \"compare\": " + J(comparePath) +
                      (tlsCa == null ? "" : ", \"tls\": {\"ca_file\": " + J(tlsCa) + ", \"options\": \"ClientOptions.Tls = new TlsOptions { CaFile } (the core's OpenSSL, full verification)\"}") + "},\n");
            sb.Append("  \"rows\": [\n");
            for (int i = 0; i < results.Count; i++)
            {
                var r = results[i];
                sb.Append("    {\"client\": \"slotlane-csharp\", \"api\": \"csharp-pipeline\", \"row\": " + J(r.Kind) + ", \"op\": " + J(r.Op) + ", \"depth\": " + r.Depth +
                          ", \"ok\": " + (r.Ok ? "true" : "false") + ", \"error\": " + J(r.Error) + ", \"bytes_source\": \"sl_stats.bytes_written deltas summed over the pooled handles\",\n     \"rounds\": [");
                sb.Append(string.Join(", ", r.Rounds.Select(x =>
                    "{\"requests\": " + x.Requests + ", \"pipelines\": " + x.Pipelines + ", \"wall_s\": " + N(x.Wall) + ", \"user_ns\": " + x.UserNs + ", \"sys_ns\": " + x.SysNs +
                    ", \"bytes_written\": " + x.BytesWritten + ", \"payload_bytes\": " + x.Payload + ", \"server_input_bytes\": null, \"moved\": " + x.Moved + ", \"ask\": " + x.Ask +
                    ", \"tryagain\": " + x.TryAgain + ", \"refreshes\": " + x.Refreshes + ", \"connects\": " + x.Connects + ", \"reconnects\": " + x.Reconnects +
                    ", \"load1\": " + N(x.Load1) + ", \"cpu_ns_per_req\": " + N((double)(x.UserNs + x.SysNs) / x.Requests) +
                    ", \"user_ns_per_req\": " + N((double)x.UserNs / x.Requests) + ", \"sys_ns_per_req\": " + N((double)x.SysNs / x.Requests) +
                    ", \"bytes_per_req\": " + N((double)x.BytesWritten / x.Requests) + ", \"req_per_s\": " + N(x.Requests / x.Wall) + "}")));
                sb.Append("],\n     \"median\": {" + string.Join(", ", r.Median.Select(kv => J(kv.Key) + ": " + N(kv.Value))) + (r.Median.Count > 0 ? ", " : "") + "\"server_input_bytes_per_req\": null}" +
                          ", \"x_plain\": " + (r.XPlain.HasValue ? N(r.XPlain.Value) : "null") +
                          ", \"c_tool_user_ns_per_req\": " + (r.CUser.HasValue ? N(r.CUser.Value) : "null") +
                          ", \"x_c_tool\": " + (r.XC.HasValue ? N(r.XC.Value) : "null") + "}" + (i + 1 < results.Count ? "," : "") + "\n");
            }
            sb.Append("  ],\n  \"targets\": [\n");
            var targets = new List<string>();
            foreach (var r in results.Where(x => x.Ok))
            {
                if (r.XC.HasValue)
                    targets.Add(Target("user CPU <= 1.5 x C tool (" + r.Kind + ")", r, r.XC.Value, 1.5));
                if (r.Kind == "one-node" && r.XPlain.HasValue) targets.Add(Target("one-node user CPU <= 1.1 x plain", r, r.XPlain.Value, 1.1));
                if (r.Kind == "cluster" && r.XPlain.HasValue) targets.Add(Target("cluster user CPU <= 1.5 x plain", r, r.XPlain.Value, 1.5));
            }
            sb.Append(string.Join(",\n", targets));
            sb.Append("\n  ]\n}\n");

            WriteNamed(jsonPath, sb.ToString(), "cluster-cost-csharp");
        }

        /// <summary>Writes a record to a file, or into DIR/ as HOST-DATE-TIME-KIND.json (a name never taken twice: link(2)).</summary>
        internal static void WriteNamed(string file, string text, string kind)
        {
            string host = Environment.MachineName;
            if (file.EndsWith("/"))
            {
                Directory.CreateDirectory(file);
                string tmp = Path.Combine(file, "." + host + "-" + Process.GetCurrentProcess().Id + ".tmp");
                File.WriteAllText(tmp, text);
                for (int tries = 0; ; tries++)
                {
                    string name = Path.Combine(file, host + "-" + DateTime.UtcNow.ToString("yyyy-MM-dd-HHmmss") + "-" + kind + ".json");
                    if (LibC.link(tmp, name) == 0) { file = name; break; }
                    if (tries > 10) throw new IOException("cannot create " + name);
                    Thread.Sleep(1000);
                }
                File.Delete(tmp);
            }
            else File.WriteAllText(file, text);
            Console.Error.WriteLine(kind + ": record " + file);
        }

        static string Target(string name, Row r, double value, double limit)
        {
            return "    {\"name\": " + J(name) + ", \"row\": " + J(r.Kind) + ", \"op\": " + J(r.Op) + ", \"depth\": " + r.Depth + ", \"value\": " + N(value) +
                   ", \"limit\": " + N(limit) + ", \"met\": " + (value <= limit ? "true" : "false") + "}";
        }
    }
}
