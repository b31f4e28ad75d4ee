using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace Slotlane.Tests
{
    /// <summary>A small JSON reader for the conformance cases (objects → Dictionary, arrays → List,
    /// numbers → their text as JsonNumber so int64 values stay exact).</summary>
    internal sealed class JsonNumber
    {
        internal readonly string Text;
        internal JsonNumber(string t) { Text = t; }
        internal long AsLong() { return long.Parse(Text, CultureInfo.InvariantCulture); }
        public override string ToString() { return Text; }
    }

    internal sealed class MiniJson
    {
        private readonly string _s;
        private int _i;

        private MiniJson(string s) { _s = s; }

        internal static object Parse(string s)
        {
            var p = new MiniJson(s);
            object v = p.Value();
            p.Ws();
            if (p._i != s.Length) throw new FormatException("trailing characters at " + p._i);
            return v;
        }

        private void Ws() { while (_i < _s.Length && char.IsWhiteSpace(_s[_i])) _i++; }

        private object Value()
        {
            Ws();
            char c = _s[_i];
            if (c == '{')
            {
                _i++;
                var d = new Dictionary<string, object>();
                Ws();
                if (_s[_i] == '}') { _i++; return d; }
                while (true)
                {
                    Ws();
                    string k = Str();
                    Ws();
                    Expect(':');
                    d[k] = Value();
                    Ws();
                    if (_s[_i] == ',') { _i++; continue; }
                    Expect('}');
                    return d;
                }
            }
            if (c == '[')
            {
                _i++;
                var l = new List<object>();
                Ws();
                if (_s[_i] == ']') { _i++; return l; }
                while (true)
                {
                    l.Add(Value());
                    Ws();
                    if (_s[_i] == ',') { _i++; continue; }
                    Expect(']');
                    return l;
                }
            }
            if (c == '"') return Str();
            if (_s.Substring(_i).StartsWith("true")) { _i += 4; return true; }
            if (_s.Substring(_i).StartsWith("false")) { _i += 5; return false; }
            if (_s.Substring(_i).StartsWith("null")) { _i += 4; return null; }
            int st = _i;
            while (_i < _s.Length && "+-0123456789.eE".IndexOf(_s[_i]) >= 0) _i++;
            if (st == _i) throw new FormatException("unexpected '" + c + "' at " + _i);
            return new JsonNumber(_s.Substring(st, _i - st));
        }

        private void Expect(char c)
        {
            if (_s[_i] != c) throw new FormatException("expected '" + c + "' at " + _i);
            _i++;
        }

        private string Str()
        {
            Expect('"');
            var sb = new StringBuilder();
            while (true)
            {
                char c = _s[_i++];
                if (c == '"') return sb.ToString();
                if (c != '\\') { sb.Append(c); continue; }
                char e = _s[_i++];
                switch (e)
                {
                    case 'n': sb.Append('\n'); break;
                    case 'r': sb.Append('\r'); break;
                    case 't': sb.Append('\t'); break;
                    case 'b': sb.Append('\b'); break;
                    case 'f': sb.Append('\f'); break;
                    case 'u': sb.Append((char)int.Parse(_s.Substring(_i, 4), NumberStyles.HexNumber)); _i += 4; break;
                    default: sb.Append(e); break;
                }
            }
        }
    }
}
