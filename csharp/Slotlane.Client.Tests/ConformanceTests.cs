using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Numerics;
using System.Text;
using NUnit.Framework;
#if NUNIT2
using OneTimeSetUpAttribute = NUnit.Framework.TestFixtureSetUpAttribute;
#endif

namespace Slotlane.Tests
{
    /// <summary>The shared cases of bindings/conformance/ (README there): each case's commands run as one
    /// pipeline; the records' types (depth-first) and the .NET values users get are both compared with
    /// the recorded replies.</summary>
    [TestFixture]
    public class ConformanceTests
    {
        // Cases the bundled slotlane-server cannot answer yet: run against it too, they must fail (so
        // this list is noticed when the server grows them).
        private static readonly string[] BundledLacks =
        {
            // none: the bundled server answers every case now (transactions, Lua, INFO's verbatim string)
        };

        private List<Dictionary<string, object>> _cases;
        private List<string> _files;

        [OneTimeSetUp]
        public void Load()
        {
            _cases = new List<Dictionary<string, object>>();
            _files = new List<string>();
            string dir = Path.Combine(Servers.Root, "bindings", "conformance", "cases");
            foreach (string f in Directory.GetFiles(dir, "*.json").OrderBy(x => x, StringComparer.Ordinal))
            {
                var doc = (Dictionary<string, object>)MiniJson.Parse(File.ReadAllText(f));
                foreach (var c in (List<object>)doc["cases"])
                {
                    _cases.Add((Dictionary<string, object>)c);
                    _files.Add(Path.GetFileName(f));
                }
            }
            Assert.That(_cases.Count, Is.GreaterThanOrEqualTo(30), "conformance cases found in " + dir);
        }

        [Test]
        public void StandaloneRedis() { RunAll(Servers.PlainRedis, ClientMode.Plain, null); }

        [Test]
        public void RedisCluster() { RunAll(Servers.ClusterRedis, ClientMode.Cluster, null); }

        [Test]
        public void BundledServer() { RunAll(Servers.Bundled, ClientMode.Cluster, BundledLacks); }

        private void RunAll(string url, ClientMode expectMode, string[] lacking)
        {
            var failures = new List<string>();
            int ran = 0, lackingSeen = 0;
            CoreHandle.KeepTypes = true;
            try
            {
                foreach (int resp in new[] { 2, 3 })
                {
                    using (var client = SlotlaneClient.Connect(new ClientOptions { Url = url, Protocol = resp }))
                    {
                        Assert.That(client.Mode, Is.EqualTo(expectMode));
                        for (int k = 0; k < _cases.Count; k++)
                        {
                            var c = _cases[k];
                            string name = (string)c["name"], mode = (string)c["mode"];
                            if (mode == "cluster" && client.Mode != ClientMode.Cluster) continue;
                            if (mode == "plain" && client.Mode != ClientMode.Plain) continue;
                            if (!RespVersions(c["resp"]).Contains(resp)) continue;
                            string fail = RunCase(client, c, resp);
                            ran++;
                            bool lacks = lacking != null && lacking.Contains(name);
                            if (lacks)
                            {
                                lackingSeen++;
                                if (fail == null)
                                    failures.Add(name + " (resp" + resp + "): passes against the bundled server now: remove it from BundledLacks");
                                else if (fail.IndexOf("unknown command", StringComparison.Ordinal) < 0)
                                    failures.Add(name + " (resp" + resp + ", " + _files[k] + "): " + fail);
                            }
                            else if (fail != null) failures.Add(name + " (resp" + resp + ", " + _files[k] + "): " + fail);
                        }
                    }
                }
            }
            finally { CoreHandle.KeepTypes = false; }
            Assert.That(ran, Is.GreaterThanOrEqualTo(60), "cases run");
            if (lacking != null && lacking.Length > 0) Assert.That(lackingSeen, Is.GreaterThan(0)); // a listed case must exist
            Assert.That(failures, Is.Empty, string.Join("\n", failures));
        }

        internal static List<int> RespVersions(object r)
        {
            var l = new List<int>();
            var list = r as List<object>;
            if (list != null) foreach (var x in list) l.Add((int)((JsonNumber)x).AsLong());
            else l.Add((int)((JsonNumber)r).AsLong());
            return l;
        }

        internal static object Arg(object a)
        {
            var s = a as string;
            if (s != null) return s;
            return Hex((string)((Dictionary<string, object>)a)["hex"]);
        }

        internal static byte[] Hex(string h)
        {
            var b = new byte[h.Length / 2];
            for (int i = 0; i < b.Length; i++) b[i] = byte.Parse(h.Substring(2 * i, 2), NumberStyles.HexNumber);
            return b;
        }

        private static string RunCase(SlotlaneClient client, Dictionary<string, object> c, int resp)
        {
            client.Flushall();
            object setup;
            using (var p = client.CreatePipeline())
            {
                if (c.TryGetValue("setup", out setup) && setup != null)
                {
                    foreach (var cmd in (List<object>)setup) p.Add(((List<object>)cmd).Select(Arg).ToArray());
                    object[] sr = p.Execute();
                    for (int i = 0; i < sr.Length; i++)
                        if (sr[i] is Exception) return "setup command " + i + " failed: " + ((Exception)sr[i]).Message;
                }
                foreach (var cmd in (List<object>)c["commands"]) p.Add(((List<object>)cmd).Select(Arg).ToArray());
                byte[] types;
                object[] got = p.ExecuteRaw(out types);
                var expected = (List<object>)((Dictionary<string, object>)c["expected"])[resp.ToString(CultureInfo.InvariantCulture)];
                if (expected.Count != got.Length) return "expected " + expected.Count + " replies, got " + got.Length;
                for (int i = 0; i < got.Length; i++)
                {
                    string why = Match((Dictionary<string, object>)expected[i], got[i]);
                    if (why != null) return "command #" + i + ": " + why;
                }
                // record types, depth-first
                var want = new List<byte>();
                foreach (var e in expected) Flatten((Dictionary<string, object>)e, want);
                bool same = want.Count == types.Length;
                for (int i = 0; same && i < types.Length; i++) same = want[i] == 0 || want[i] == types[i];
                if (!same)
                    return "record types " + string.Join(",", types) + ", expected " + string.Join(",", want);
                return null;
            }
        }

        private static readonly Dictionary<string, byte> TypeCodes = new Dictionary<string, byte>
        {
            { "string", 1 }, { "status", 2 }, { "error", 3 }, { "integer", 4 }, { "nil", 5 }, { "array", 6 }, { "map", 7 },
            { "set", 8 }, { "double", 9 }, { "bool", 10 }, { "bignum", 11 }, { "verb", 12 }, { "push", 13 },
        };

        private static void Flatten(Dictionary<string, object> e, List<byte> into)
        {
            string t = (string)e["type"];
            into.Add(TypeCodes[t]);
            object ch;
            if (e.TryGetValue("children", out ch) && !(e.ContainsKey("unordered") && (bool)e["unordered"]))
                foreach (var x in (List<object>)ch) Flatten((Dictionary<string, object>)x, into);
            else if (ch != null)
            {
                // unordered: the children's records may come in any order; count them as wildcards (0)
                // and let Match check the values and their types
                var sub = new List<byte>();
                foreach (var x in (List<object>)ch) Flatten((Dictionary<string, object>)x, sub);
                foreach (var unused in sub) into.Add(0);
            }
        }

        private static readonly string[] Kinds = { "server", "io", "timeout", "redirects", "protocol", "cancelled", "cluster", "argument" };

        internal static string Match(Dictionary<string, object> e, object v)
        {
            string t = (string)e["type"];
            object val;
            e.TryGetValue("value", out val);
            if (val == null && !e.ContainsKey("hex") && !e.ContainsKey("children") && t != "nil" && t != "error")
                return null; // a "loose" reply of the spec's cases (its value varies): only its type was recorded
            switch (t)
            {
                case "string":
                {
                    var b = v as byte[];
                    if (b == null) return "expected a byte[] string, got " + Show(v);
                    byte[] w = e.ContainsKey("hex") ? Hex((string)e["hex"]) : Encoding.UTF8.GetBytes((string)val);
                    return b.SequenceEqual(w) ? null : "expected string " + Encoding.UTF8.GetString(w) + ", got " + Encoding.UTF8.GetString(b);
                }
                case "status":
                    return v as string == (string)val ? null : "expected status " + val + ", got " + Show(v);
                case "error":
                {
                    var x = v as SlotlaneException;
                    if (x == null) return "expected an error, got " + Show(v);
                    string kind = (string)e["kind"], prefix = (string)e["prefix"];
                    if (Kinds[(int)x.Kind] != kind) return "expected error kind " + kind + ", got " + x.Kind + ": " + x.Message;
                    bool typeOk = kind == "server" ? x is SlotlaneReplyException : kind == "cluster" ? x is SlotlaneClusterException : true;
                    if (!typeOk) return "wrong exception class " + x.GetType().Name;
                    return x.Message.StartsWith(prefix, StringComparison.Ordinal) ? null : "expected an error starting with " + prefix + ", got " + x.Message;
                }
                case "integer":
                    return v is long && (long)v == ((JsonNumber)val).AsLong() ? null : "expected integer " + val + ", got " + Show(v);
                case "nil":
                    return v == null ? null : "expected nil, got " + Show(v);
                case "array":
                case "set":
                case "push":
                {
                    var a = v as object[];
                    if (a == null) return "expected an array, got " + Show(v);
                    var ch = (List<object>)e["children"];
                    if (a.Length != ch.Count) return "expected " + ch.Count + " elements, got " + a.Length;
                    if (e.ContainsKey("unordered") && (bool)e["unordered"])
                    {
                        var used = new bool[a.Length];
                        foreach (var x in ch)
                        {
                            int j = Enumerable.Range(0, a.Length).FirstOrDefault(i => !used[i] && Match((Dictionary<string, object>)x, a[i]) == null);
                            if (used.Length == 0 || used[j] || Match((Dictionary<string, object>)x, a[j]) != null) return "unordered element not found";
                            used[j] = true;
                        }
                        return null;
                    }
                    for (int i = 0; i < a.Length; i++)
                    {
                        string why = Match((Dictionary<string, object>)ch[i], a[i]);
                        if (why != null) return "[" + i + "] " + why;
                    }
                    return null;
                }
                case "map":
                {
                    var m = v as KeyValuePair<object, object>[];
                    if (m == null) return "expected a map, got " + Show(v);
                    var ch = (List<object>)e["children"];
                    if (m.Length * 2 != ch.Count) return "expected " + ch.Count / 2 + " pairs, got " + m.Length;
                    bool unordered = e.ContainsKey("unordered") && (bool)e["unordered"];
                    var used = new bool[m.Length];
                    for (int p = 0; p < m.Length; p++)
                    {
                        var ek = (Dictionary<string, object>)ch[2 * p];
                        var ev = (Dictionary<string, object>)ch[2 * p + 1];
                        if (!unordered)
                        {
                            string why = Match(ek, m[p].Key) ?? Match(ev, m[p].Value);
                            if (why != null) return "pair " + p + ": " + why;
                            continue;
                        }
                        bool found = false;
                        for (int j = 0; j < m.Length && !found; j++)
                            if (!used[j] && Match(ek, m[j].Key) == null && Match(ev, m[j].Value) == null) { used[j] = true; found = true; }
                        if (!found) return "map pair " + p + " not found";
                    }
                    return null;
                }
                case "double":
                {
                    if (!(v is double)) return "expected a double, got " + Show(v);
                    double d = (double)v;
                    string s = (string)val;
                    if (s == "nan") return double.IsNaN(d) ? null : "expected nan, got " + d;
                    double w = s == "inf" ? double.PositiveInfinity : s == "-inf" ? double.NegativeInfinity : double.Parse(s, CultureInfo.InvariantCulture);
                    return d.Equals(w) ? null : "expected double " + s + ", got " + d.ToString("R", CultureInfo.InvariantCulture);
                }
                case "bool":
                    return v is bool && (bool)v == (bool)val ? null : "expected bool " + val + ", got " + Show(v);
                case "bignum":
                    return v is BigInteger && (BigInteger)v == BigInteger.Parse((string)val, CultureInfo.InvariantCulture) ? null : "expected bignum " + val + ", got " + Show(v);
                case "verb":
                {
                    var vs = v as VerbatimString;
                    if (vs == null) return "expected a verbatim string, got " + Show(v);
                    return vs.Format == (string)e["format"] && vs.Text == (string)val ? null : "verbatim differs: " + vs.Format + ":" + vs.Text;
                }
            }
            return "unknown expected type " + t;
        }

        private static string Show(object v)
        {
            if (v == null) return "nil";
            var b = v as byte[];
            if (b != null) return "\"" + Encoding.UTF8.GetString(b) + "\"";
            var ex = v as Exception;
            if (ex != null) return ex.GetType().Name + " " + ex.Message;
            return v.GetType().Name + " " + v;
        }
    }
}
