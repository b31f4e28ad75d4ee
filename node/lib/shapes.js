'use strict';
// The spec's reply types as JavaScript values (bindings/spec/README.md, "Reply types and the
// one normalisation of RESP2 and RESP3"), and the argument checks the generated methods
// (commands.js) use. shaper('pairs<string,double>') returns the function that turns a decoded
// reply (index.js's decoder: strings or Buffers, numbers or bigints, null, Arrays, Maps, Sets,
// booleans) into the type's value; built once per type. Nothing here knows a command.
const { ArgumentError } = require('./errors');

function parse(s) {
  let pos = 0;
  function one() {
    let j = pos;
    while (j < s.length && /[a-z]/.test(s[j])) j++;
    const name = s.slice(pos, j);
    pos = j;
    const kids = [];
    if (s[pos] === '<') {
      pos++;
      kids.push(one());
      while (s[pos] === ',') { pos++; kids.push(one()); }
      pos++; // '>'
    }
    const nullable = s[pos] === '?';
    if (nullable) pos++;
    return { name, kids, nullable };
  }
  return one();
}

const text = (v) => (typeof v === 'string' ? v : Buffer.isBuffer(v) ? v.toString('utf8') : String(v));

function toNumber(v) {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  const t = text(v);
  if (t === 'inf' || t === '+inf') return Infinity;
  if (t === '-inf') return -Infinity;
  const n = Number(t);
  if (Number.isNaN(n) && t !== 'nan') throw new TypeError(`not a number: ${t}`);
  return n;
}

function toBool(v) {
  if (typeof v === 'boolean') return v;
  if (v === 0 || v === 1) return v === 1;
  throw new TypeError(`not a 0/1 boolean: ${v}`);
}

// A map or pairs reply in any layout: a RESP3 Map, a RESP2 flat array k, v, k, v, or an
// array of [k, v] arrays (told apart by the first element).
function entries(r) {
  if (r instanceof Map) return Array.from(r);
  if (!Array.isArray(r)) throw new TypeError('not a map or an array of pairs');
  if (r.length > 0 && Array.isArray(r[0])) return r.map((p) => [p[0], p[1]]);
  const out = [];
  for (let i = 0; i + 1 < r.length; i += 2) out.push([r[i], r[i + 1]]);
  return out;
}

const ident = (x) => x;

function compile(node) {
  const { name, kids, nullable } = node;
  let f = null;
  switch (name) {
    case 'ok': return (r) => r === 'OK' || (Buffer.isBuffer(r) && r.toString() === 'OK');
    case 'status': case 'string': case 'int': case 'any': f = null; break;
    case 'bool': f = toBool; break;
    case 'double': f = toNumber; break;
    case 'cursor': f = text; break;
    case 'array': {
      const g = compile(kids[0]);
      f = g === null ? null : (r) => r.map(g);
      break;
    }
    case 'set': {
      const g = compile(kids[0]) || ident;
      f = (r) => { const s = new Set(); for (const x of r) s.add(g(x)); return s; };
      break;
    }
    case 'map': case 'pairs': {
      const fk = compile(kids[0]) || ident, fv = compile(kids[1]) || ident;
      f = name === 'map'
        ? (r) => new Map(entries(r).map(([k, v]) => [fk(k), fv(v)]))
        : (r) => entries(r).map(([k, v]) => [fk(k), fv(v)]);
      break;
    }
    case 'tuple': {
      const gs = kids.map((k) => compile(k) || ident);
      f = (r) => {
        if (!Array.isArray(r) || r.length !== gs.length) throw new TypeError(`expected ${gs.length} elements`);
        return r.map((x, i) => gs[i](x));
      };
      break;
    }
    default: throw new Error(`slotlane: unknown reply type ${name}`);
  }
  if (nullable && f !== null) {
    const g = f;
    return (r) => (r === null ? null : g(r));
  }
  return f;
}

const cache = new Map();

/** The shaper of a reply type that needs one (the renderer knows which). */
function shaper(t) {
  if (!cache.has(t)) cache.set(t, compile(parse(t)));
  const f = cache.get(t);
  if (f === null) throw new Error(`slotlane: reply type ${t} needs no shaper`);
  return f;
}

// ------------------------------------------------------------------ argument checks

/** An int parameter: an integer number or a bigint, never a boolean. */
function int(name, v) {
  if (typeof v === 'bigint' || Number.isInteger(v)) return v;
  throw new TypeError(`slotlane: ${name} must be an integer (got ${typeof v === 'number' ? v : typeof v})`);
}

/** A double parameter: a number (Infinity is sent as +inf), never a boolean. */
function dbl(name, v) {
  if (typeof v !== 'number' || Number.isNaN(v)) throw new TypeError(`slotlane: ${name} must be a number (got ${typeof v})`);
  if (v === Infinity) return '+inf';
  if (v === -Infinity) return '-inf';
  return v;
}

/** A flag: a boolean (or absent). */
function flag(name, v) {
  if (v === undefined || v === null || v === false) return false;
  if (v === true) return true;
  throw new TypeError(`slotlane: option ${name} is a flag: true or false (got ${typeof v})`);
}

const NO_OPTIONS = Object.freeze({});

/** The trailing options object of a method with optional parameters. */
function options(o, command) {
  if (o === undefined || o === null) return NO_OPTIONS;
  if (typeof o !== 'object' || Array.isArray(o)) throw new TypeError(`slotlane: ${command}: the options must be an object (got ${Array.isArray(o) ? 'an array' : typeof o})`);
  return o;
}

/** A tuple-list parameter (fieldValue, scoreMember...): an array of tuples, or for 2 fields a
 * Map or a plain object ({field: value}; ZADD's (score, member) object is {member: score}). */
function tuples(a, name, v, kinds, token, each, swapped) {
  const n = kinds.length;
  let items;
  if (Array.isArray(v)) items = v;
  else if (v instanceof Map || (typeof v === 'object' && v !== null && !(v instanceof Uint8Array))) {
    if (n !== 2) throw new TypeError(`slotlane: ${name} takes an array of ${n}-tuples`);
    items = v instanceof Map ? Array.from(v) : Object.entries(v);
    if (swapped) items = items.map(([m, s]) => [s, m]);
  } else {
    throw new TypeError(`slotlane: ${name} must be an array of tuples${n === 2 ? ', a Map or an object' : ''}`);
  }
  if (items.length === 0) throw new ArgumentError(`slotlane: ${name} needs at least one element`, 'argument');
  if (token !== null && !each) a.push(token);
  for (const t of items) {
    if (!Array.isArray(t) || t.length !== n) throw new TypeError(`slotlane: ${name}: each element must be an array of ${n}`);
    if (each) a.push(token);
    for (let i = 0; i < n; i++) {
      const k = kinds[i];
      a.push(k === 'int' ? int(name, t[i]) : k === 'double' ? dbl(name, t[i]) : t[i]);
    }
  }
}

module.exports = { shaper, int, dbl, flag, options, tuples, toNumber };
