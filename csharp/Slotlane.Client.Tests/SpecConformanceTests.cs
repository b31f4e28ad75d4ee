using System;
using System.Collections;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Reflection;
using System.Threading;
using System.Threading.Tasks;
using System.Text;
using NUnit.Framework;
#if NUNIT2
using OneTimeSetUpAttribute = NUnit.Framework.TestFixtureSetUpAttribute;
#endif

namespace Slotlane.Tests
{
    /// <summary>The spec's conformance cases (bindings/conformance/commands/*.json) through the typed methods:
    /// every call of a case is made through the rendered C# method (the spec's name mapped by
    /// CommandArgs.Methods, required parameters positional, optional ones set on its options struct, the
    /// arguments built from the call's JSON by the parameters' types) -- once queued on one Pipeline (read
    /// through Reply.Value), once on the client -- and each value is compared with the recorded reply as the
    /// method's reply type shapes it (bindings/spec/README.md). Against standalone Redis and Redis Cluster,
    /// RESP2 and RESP3. Typed string results are text (UTF-8): a recorded non-UTF-8 string is compared as
    /// .NET decodes it.</summary>
    [TestFixture]
    public class SpecConformanceTests
    {
        private Dictionary<string, Dictionary<string, object>> _methods;
        private List<Dictionary<string, object>> _cases;
        private List<string> _files;

        [OneTimeSetUp]
        public void Load()
        {
            var spec = (Dictionary<string, object>)MiniJson.Parse(File.ReadAllText(Path.Combine(Servers.Root, "bindings", "spec", "commands.json")));
            _methods = new Dictionary<string, Dictionary<string, object>>();
            foreach (var m in (List<object>)spec["methods"])
            {
                var d = (Dictionary<string, object>)m;
                _methods[(string)d["method"]] = d;
            }
            _cases = new List<Dictionary<string, object>>();
            _files = new List<string>();
            foreach (string f in Directory.GetFiles(Path.Combine(Servers.Root, "bindings", "conformance", "commands"), "*.json").OrderBy(x => x, StringComparer.Ordinal))
            {
                var doc = (Dictionary<string, object>)MiniJson.Parse(File.ReadAllText(f));
                foreach (var c in (List<object>)doc["cases"])
                {
                    _cases.Add((Dictionary<string, object>)c);
                    _files.Add(Path.GetFileName(f));
                }
            }
            Assert.That(_cases.Count, Is.GreaterThanOrEqualTo(280));
        }

        [Test]
        public void EveryMethodIsRenderedAndHasACase()
        {
            var called = new HashSet<string>();
            foreach (var c in _cases)
                foreach (var call in (List<object>)c["calls"]) called.Add((string)((Dictionary<string, object>)call)["method"]);
            var bad = new List<string>();
            foreach (string m in _methods.Keys)
            {
                if (!called.Contains(m)) bad.Add(m + ": no case");
                string cs;
                if (!CommandArgs.Methods.TryGetValue(m, out cs)) bad.Add(m + ": not rendered");
                else if (Find(typeof(SlotlaneClient), m) == null || Find(typeof(Pipeline), m) == null) bad.Add(m + ": no method " + cs);
            }
            Assert.That(bad, Is.Empty, string.Join("\n", bad));
            Assert.That(CommandArgs.Methods.Count, Is.EqualTo(_methods.Count));
        }

        /// <summary>errors.json's names -> C#'s (render_csharp.py's EXC).</summary>
        private static readonly Dictionary<string, string> CsNames = new Dictionary<string, string>
        {
            { "Error", "SlotlaneException" }, { "ResponseError", "SlotlaneReplyException" }, { "ConnectionError", "SlotlaneConnectionException" },
            { "ProtocolError", "SlotlaneProtocolException" }, { "TimeoutError", "SlotlaneTimeoutException" }, { "ClusterError", "SlotlaneClusterException" },
            { "CancelledError", "SlotlaneCancelledException" }, { "ArgumentError", "SlotlaneArgumentException" }, { "ResourceError", "SlotlaneResourceException" }, { "TlsError", "SlotlaneTlsException" },
            { "WatchError", "SlotlaneWatchException" }, { "WatchMovedError", "SlotlaneWatchMovedException" }, { "BlockingPipelineError", "SlotlaneBlockingPipelineException" },
        };

        /// <summary>Every SL_E* code and sl_err_kind (Native.cs's copies of slotlane.h) raises errors.json's type.</summary>
        [Test]
        public void ErrorsAreErrorsJson()
        {
            var e = (Dictionary<string, object>)MiniJson.Parse(File.ReadAllText(Path.Combine(Servers.Root, "bindings", "spec", "errors.json")));
            var codes = (Dictionary<string, object>)e["codes"];
            int n = 0;
            foreach (SlCode code in Enum.GetValues(typeof(SlCode)))
            {
                if (code == SlCode.SL_OK) continue;
                Assert.That(codes.ContainsKey(code.ToString()), code.ToString());
                Assert.That(Errors.FromCode((int)code, "m").GetType().Name, Is.EqualTo(CsNames[(string)codes[code.ToString()]]), code.ToString());
                n++;
            }
            Assert.That(n, Is.EqualTo(codes.Count));
            var kinds = (Dictionary<string, object>)e["kinds"];
            foreach (var kv in kinds)
            {
                var pair = (List<object>)kv.Value;
                int value = Array.IndexOf(new[] { "server", "io", "timeout", "redirects", "protocol", "cancelled", "cluster", "argument" }, (string)pair[0]);
                var x = Errors.FromKind(value, "m");
                Assert.That(x.GetType().Name, Is.EqualTo(CsNames[(string)pair[1]]), kv.Key);
                Assert.That(x.Kind.ToString().ToLowerInvariant(), Is.EqualTo((string)pair[0]), kv.Key);
            }
            foreach (var t in (List<object>)e["types"])
            {
                var d = (Dictionary<string, object>)t;
                if (d["parent"] == null) continue;
                var cls = typeof(SlotlaneException).Assembly.GetType("Slotlane." + CsNames[(string)d["name"]]);
                Assert.That(cls.BaseType.Name, Is.EqualTo(CsNames[(string)d["parent"]]));
            }
            Assert.That(Errors.FromCode((int)SlCode.SL_ECANCELLED, "c"), Is.InstanceOf<SlotlaneCancelledException>());
        }

        [Test]
        public void StandaloneRedis() { RunAll(Servers.PlainRedis, ClientMode.Plain); }

        [Test]
        public void RedisCluster() { RunAll(Servers.ClusterRedis, ClientMode.Cluster); }

        private void RunAll(string url, ClientMode expectMode)
        {
            var failures = new List<string>();
            int ran = 0;
            foreach (int resp in new[] { 2, 3 })
            {
                using (var client = SlotlaneClient.Connect(new ClientOptions { Url = url, Protocol = resp }))
                {
                    Assert.That(client.Mode, Is.EqualTo(expectMode));
                    for (int k = 0; k < _cases.Count; k++)
                    {
                        var c = _cases[k];
                        string mode = (string)c["mode"];
                        if (mode == "cluster" && client.Mode != ClientMode.Cluster) continue;
                        if (mode == "plain" && client.Mode != ClientMode.Plain) continue;
                        if (!ConformanceTests.RespVersions(c["resp"]).Contains(resp)) continue;
                        ran++;
                        string fail;
                        try { fail = RunCase(client, c, resp); }
                        catch (Exception x) { fail = x.ToString(); }
                        if (fail != null) failures.Add(_files[k] + " " + c["name"] + " (resp" + resp + "): " + fail);
                    }
                }
            }
            Assert.That(ran, Is.GreaterThanOrEqualTo(200), "case runs");
            Assert.That(failures, Is.Empty, string.Join("\n", failures));
        }

        // ------------------------------------------------------------------ calls

        /// <summary>The rendered method of a spec method: the overload with its options struct when it has options.</summary>
        private MethodInfo Find(Type cls, string method)
        {
            var m = _methods[method];
            int req = 0;
            bool opt = false;
            foreach (var p in (List<object>)m["params"])
            {
                if ((bool)((Dictionary<string, object>)p)["optional"]) opt = true;
                else req++;
            }
            string name = CommandArgs.Methods[method];
            return cls.GetMethods().FirstOrDefault(x => x.Name == name && x.GetParameters().Length == req + (opt ? 1 : 0)
                                                       && (!opt || x.GetParameters()[req].ParameterType.Name.EndsWith("Options", StringComparison.Ordinal)));
        }

        private static object Scalar(string type, object v)
        {
            switch (type)
            {
                case "key": return (string)v;
                case "int": return ((JsonNumber)v).AsLong();
                case "double": return double.Parse(((JsonNumber)v).Text, CultureInfo.InvariantCulture);
                case "flag": return (bool)v;
                case "value":
                {
                    var n = v as JsonNumber;
                    if (n != null)
                        return n.Text.IndexOfAny(new[] { '.', 'e', 'E' }) >= 0 ? (object)double.Parse(n.Text, CultureInfo.InvariantCulture) : n.AsLong();
                    return ConformanceTests.Arg(v);
                }
            }
            throw new ArgumentException("scalar of type " + type);
        }

        private static object Arg(Dictionary<string, object> p, object v, Type t)
        {
            string type = (string)p["type"];
            if (type == "tuple")
            {
                var fields = (List<object>)p["fields"];
                var items = (List<object>)v;
                var arr = Array.CreateInstance(t.GetElementType(), items.Count);
                for (int i = 0; i < items.Count; i++)
                {
                    var tup = (List<object>)items[i];
                    var f = new object[tup.Count];
                    for (int j = 0; j < f.Length; j++) f[j] = Scalar((string)((Dictionary<string, object>)fields[j])["type"], tup[j]);
                    arr.SetValue(Activator.CreateInstance(t.GetElementType(), f), i);
                }
                return arr;
            }
            if (p.ContainsKey("list") && (bool)p["list"])
            {
                var items = (List<object>)v;
                var arr = Array.CreateInstance(t.GetElementType(), items.Count);
                for (int i = 0; i < items.Count; i++) arr.SetValue(Scalar(type, items[i]), i);
                return arr;
            }
            return Scalar(type, v);
        }

        private static object[] CallArgs(MethodInfo fn, Dictionary<string, object> m, Dictionary<string, object> args)
        {
            var ps = fn.GetParameters();
            var out_ = new List<object>();
            object opts = null;
            foreach (var pe in (List<object>)m["params"])
            {
                var p = (Dictionary<string, object>)pe;
                string name = (string)p["name"];
                object v;
                if (!(bool)p["optional"])
                {
                    if (!args.TryGetValue(name, out v)) throw new ArgumentException(m["method"] + ": no argument " + name);
                    out_.Add(Arg(p, v, ps[out_.Count].ParameterType));
                    continue;
                }
                if (opts == null) opts = Activator.CreateInstance(ps[ps.Length - 1].ParameterType);
                if (!args.TryGetValue(name, out v)) continue;
                string field = string.Concat(name.Split('_').Select(w => char.ToUpperInvariant(w[0]) + w.Substring(1)));
                var fi = opts.GetType().GetField(field);
                if (fi == null) throw new ArgumentException(m["method"] + ": no option field " + field);
                Type ft = Nullable.GetUnderlyingType(fi.FieldType) ?? fi.FieldType;
                fi.SetValue(opts, Arg(p, v, ft));
            }
            if (ps.Length > out_.Count) out_.Add(opts ?? Activator.CreateInstance(ps[ps.Length - 1].ParameterType));
            return out_.ToArray();
        }

        private static object Invoke(MethodInfo fn, object target, object[] args, out Exception err)
        {
            err = null;
            try { return fn.Invoke(target, args); }
            catch (TargetInvocationException x) { err = x.InnerException; return null; }
        }

        private string RunCase(SlotlaneClient client, Dictionary<string, object> c, int resp)
        {
            var calls = (List<object>)c["calls"];
            var want = (List<object>)((Dictionary<string, object>)c["expected"])[resp.ToString(CultureInfo.InvariantCulture)];
            // 1. the calls queued on one pipeline
            Prepare(client, c);
            using (var p = client.CreatePipeline())
            {
                var replies = new List<object>();
                foreach (var ce in calls)
                {
                    var call = (Dictionary<string, object>)ce;
                    var m = _methods[(string)call["method"]];
                    var fn = Find(typeof(Pipeline), (string)m["method"]);
                    Exception err;
                    var r = Invoke(fn, p, CallArgs(fn, m, (Dictionary<string, object>)call["args"]), out err);
                    if (err != null) return "pipeline call " + m["method"] + " refused: " + err;
                    replies.Add(r);
                }
                p.Execute();
                for (int i = 0; i < replies.Count; i++)
                {
                    string mname = (string)((Dictionary<string, object>)calls[i])["method"];
                    Exception err;
                    object v = Invoke(replies[i].GetType().GetProperty("Value").GetGetMethod(), replies[i], new object[0], out err);
                    string why = Outcome((string)_methods[mname]["reply"], (Dictionary<string, object>)want[i], v, err);
                    if (why != null) return "pipeline call " + i + " " + mname + ": " + why;
                }
            }
            // 2. one by one on the client
            Prepare(client, c);
            for (int i = 0; i < calls.Count; i++)
            {
                var call = (Dictionary<string, object>)calls[i];
                var m = _methods[(string)call["method"]];
                var fn = Find(typeof(SlotlaneClient), (string)m["method"]);
                Exception err;
                object v = Invoke(fn, client, CallArgs(fn, m, (Dictionary<string, object>)call["args"]), out err);
                string why = Outcome((string)m["reply"], (Dictionary<string, object>)want[i], v, err);
                if (why != null) return "client call " + i + " " + m["method"] + ": " + why;
            }
            // 3. one by one through the client's XxxAsync methods (CommandsAsync.g.cs), awaited in turn
            Prepare(client, c);
            for (int i = 0; i < calls.Count; i++)
            {
                var call = (Dictionary<string, object>)calls[i];
                var m = _methods[(string)call["method"]];
                var fn = Find(typeof(SlotlaneClient), (string)m["method"]);
                var afn = FindAsync(fn);
                if (afn == null) return "client call " + i + " " + m["method"] + ": no " + fn.Name + "Async(..., CancellationToken)";
                var args = new List<object>(CallArgs(fn, m, (Dictionary<string, object>)call["args"])) { CancellationToken.None };
                Exception err;
                object v = null;
                var task = (Task)Invoke(afn, client, args.ToArray(), out err);
                if (err == null)
                {
                    try { task.Wait(); v = task.GetType().GetProperty("Result").GetValue(task); }
                    catch (AggregateException x) { err = x.InnerException; }
                }
                string why = Outcome((string)m["reply"], (Dictionary<string, object>)want[i], v, err);
                if (why != null) return "async call " + i + " " + m["method"] + ": " + why;
            }
            return null;
        }

        /// <summary>The async twin of a client method: the same parameters and a CancellationToken, returning Task of the same type.</summary>
        private static MethodInfo FindAsync(MethodInfo fn)
        {
            var ps = fn.GetParameters().Select(x => x.ParameterType).Concat(new[] { typeof(CancellationToken) }).ToArray();
            var a = typeof(SlotlaneClient).GetMethod(fn.Name + "Async", ps);
            if (a == null || a.ReturnType != typeof(Task<>).MakeGenericType(fn.ReturnType)) return null;
            return a;
        }

        private static void Prepare(SlotlaneClient client, Dictionary<string, object> c)
        {
            client.Flushall();
            object setup;
            if (!c.TryGetValue("setup", out setup) || setup == null) return;
            using (var p = client.CreatePipeline())
            {
                foreach (var cmd in (List<object>)setup) p.Add(((List<object>)cmd).Select(ConformanceTests.Arg).ToArray());
                object[] r = p.Execute();
                for (int i = 0; i < r.Length; i++)
                    if (r[i] is Exception) throw new Exception("setup command " + i + " failed: " + ((Exception)r[i]).Message);
            }
        }

        // ------------------------------------------------------------------ replies

        private sealed class T
        {
            internal string Name;
            internal List<T> Of = new List<T>();
            internal bool Nil;
        }

        private static T Parse(string s, ref int pos)
        {
            var n = new T();
            int j = pos;
            while (j < s.Length && char.IsLower(s[j])) j++;
            n.Name = s.Substring(pos, j - pos);
            pos = j;
            if (pos < s.Length && s[pos] == '<')
            {
                pos++;
                n.Of.Add(Parse(s, ref pos));
                while (s[pos] == ',') { pos++; n.Of.Add(Parse(s, ref pos)); }
                pos++;
            }
            if (pos < s.Length && s[pos] == '?') { pos++; n.Nil = true; }
            return n;
        }

        private static string Outcome(string reply, Dictionary<string, object> e, object v, Exception err)
        {
            if ((string)e["type"] == "error")
            {
                var x = err as SlotlaneException;
                if (x == null) return "expected an error, got " + (err != null ? err.ToString() : Show(v));
                return ConformanceTests.Match(e, x);
            }
            if (err != null) return "expected " + MiniShow(e) + ", got " + err;
            int pos = 0;
            return Typed(Parse(reply, ref pos), e, v);
        }

        private static bool Loose(Dictionary<string, object> e)
        {
            return !e.ContainsKey("value") && !e.ContainsKey("hex") && !e.ContainsKey("children");
        }

        private static string Text(Dictionary<string, object> e)
        {
            return e.ContainsKey("hex") ? Encoding.UTF8.GetString(ConformanceTests.Hex((string)e["hex"])) : e["value"].ToString();
        }

        private static double Dbl(string s)
        {
            switch (s)
            {
                case "inf": case "+inf": return double.PositiveInfinity;
                case "-inf": return double.NegativeInfinity;
                case "nan": return double.NaN;
            }
            return double.Parse(s, CultureInfo.InvariantCulture);
        }

        private static object Prop(object o, string name)
        {
            var t = o.GetType();
            var f = t.GetField(name);
            return f != null ? f.GetValue(o) : t.GetProperty(name).GetValue(o, null);
        }

        /// <summary>null when the typed value v matches the recorded reply e under type t, else why not.</summary>
        private static string Typed(T t, Dictionary<string, object> e, object v)
        {
            string et = (string)e["type"];
            string bad = "expected " + MiniShow(e) + " as " + t.Name + ", got " + Show(v);
            if (et == "nil")
            {
                if (t.Name == "ok") return Equals(v, false) ? null : bad;
                return v == null && (t.Nil || t.Name == "any") ? null : bad;
            }
            if (v == null) return bad;
            bool loose = Loose(e);
            switch (t.Name)
            {
                case "any": return ConformanceTests.Match(e, v);
                case "ok": return Equals(v, true) ? null : bad;
                case "status":
                case "string": return v is string && (loose || (string)v == Text(e)) ? null : bad;
                case "int": return v is long && (loose || (long)v == ((JsonNumber)e["value"]).AsLong()) ? null : bad;
                case "bool":
                    return v is bool && (loose || (bool)v == (e["value"] is bool ? (bool)e["value"] : ((JsonNumber)e["value"]).AsLong() == 1)) ? null : bad;
                case "double": return v is double && (loose || ((double)v).Equals(Dbl(e["value"].ToString()))) ? null : bad;
                case "cursor": return v is ulong && (loose || (ulong)v == ulong.Parse(Text(e), CultureInfo.InvariantCulture)) ? null : bad;
                case "array":
                case "set":
                {
                    if (!(v is IEnumerable) || v is string || (t.Name == "set") != v.GetType().Name.StartsWith("HashSet", StringComparison.Ordinal)) return bad;
                    if (loose) return null;
                    var got = ((IEnumerable)v).Cast<object>().ToList();
                    var kids = (List<object>)e["children"];
                    if (got.Count != kids.Count) return bad + " (" + got.Count + " elements)";
                    bool unordered = t.Name == "set" || (e.ContainsKey("unordered") && (bool)e["unordered"]);
                    var used = new bool[got.Count];
                    for (int i = 0; i < kids.Count; i++)
                    {
                        var k = (Dictionary<string, object>)kids[i];
                        if (!unordered)
                        {
                            string w = Typed(t.Of[0], k, got[i]);
                            if (w != null) return "[" + i + "]: " + w;
                            continue;
                        }
                        bool found = false;
                        for (int j = 0; j < got.Count && !found; j++)
                            if (!used[j] && Typed(t.Of[0], k, got[j]) == null) used[j] = found = true;
                        if (!found) return bad + " (no element for " + MiniShow(k) + ")";
                    }
                    return null;
                }
                case "map":
                case "pairs":
                {
                    var items = new List<object[]>();
                    if (t.Name == "map")
                    {
                        var d = v as IDictionary;
                        if (d == null) return bad;
                        foreach (DictionaryEntry en in d) items.Add(new[] { en.Key, en.Value });
                    }
                    else
                    {
                        var a = v as Array;
                        if (a == null) return bad;
                        foreach (object o in a) items.Add(new[] { Prop(o, "Key"), Prop(o, "Value") });
                    }
                    if (loose) return null;
                    var kids = (List<object>)e["children"];
                    var flat = new List<Dictionary<string, object>>();
                    bool nested = et == "array" && kids.Count > 0 && (string)((Dictionary<string, object>)kids[0])["type"] == "array";
                    foreach (var k in kids)
                    {
                        if (nested) foreach (var kk in (List<object>)((Dictionary<string, object>)k)["children"]) flat.Add((Dictionary<string, object>)kk);
                        else flat.Add((Dictionary<string, object>)k);
                    }
                    if (items.Count * 2 != flat.Count) return bad + " (" + items.Count + " pairs)";
                    bool unordered = t.Name == "map" || (e.ContainsKey("unordered") && (bool)e["unordered"]);
                    var used = new bool[items.Count];
                    for (int i = 0; i < flat.Count; i += 2)
                    {
                        bool found = false;
                        for (int j = 0; j < items.Count && !found; j++)
                        {
                            if (used[j] || (!unordered && j != i / 2)) continue;
                            if (Typed(t.Of[0], flat[i], items[j][0]) == null && Typed(t.Of[1], flat[i + 1], items[j][1]) == null) used[j] = found = true;
                        }
                        if (!found) return bad + " (no pair for " + MiniShow(flat[i]) + ", " + MiniShow(flat[i + 1]) + ")";
                    }
                    return null;
                }
                case "tuple":
                {
                    if (!v.GetType().Name.StartsWith("ValueTuple", StringComparison.Ordinal)) return bad;
                    if (loose) return null;
                    var kids = (List<object>)e["children"];
                    if (kids.Count != 2) return bad;
                    return Typed(t.Of[0], (Dictionary<string, object>)kids[0], Prop(v, "Item1"))
                           ?? Typed(t.Of[1], (Dictionary<string, object>)kids[1], Prop(v, "Item2"));
                }
            }
            return "unknown type " + t.Name;
        }

        private static string MiniShow(Dictionary<string, object> e)
        {
            var parts = new List<string>();
            foreach (var kv in e) parts.Add(kv.Key + "=" + (kv.Value is List<object> ? "[" + ((List<object>)kv.Value).Count + "]" : kv.Value));
            return "{" + string.Join(", ", parts) + "}";
        }

        private static string Show(object v)
        {
            if (v == null) return "null";
            var en = v as IEnumerable;
            if (en != null && !(v is string)) return v.GetType().Name + " [" + string.Join(", ", en.Cast<object>().Select(Show)) + "]";
            return v.GetType().Name + " " + v;
        }
    }
}
