// Reference implementation of Cairn's canonical JSON and hashes for Node.js (no
// dependencies; hashing uses node:crypto). The rules are in docs/canonical-json.md;
// canonical/testdata/vectors.json holds the test vectors
// (node --test examples/js/).
//
// Why not JSON.stringify with sorted keys: it writes control characters as
// \u001b (Cairn writes \u001B), floats as 1e-7 and 1e+21 (Cairn writes 1.0e-7 and
// 1.0e21), cannot tell 1.0 from 1, loses integers beyond 2**53, and the default
// sort compares UTF-16 code units where Cairn compares UTF-8 bytes (an emoji key
// sorts after U+FFFF, not before U+E000).
//
// Values: null, booleans, strings, arrays, plain objects, and numbers as
//   * Number: written as JSON.stringify writes it and then read by Cairn, so
//     2 is the integer 2, 0.5 and 1e21 are floats, and -0 is the integer 0;
//   * BigInt: an integer of any size;
//   * JsonFloat: a float whose value is integral (1.0, -0.0), which a Number
//     cannot express.
// parse() returns integers as Number (BigInt beyond 2**53) and floats as
// JsonFloat, so parse then encode keeps every number as it was.

import { createHash } from "node:crypto";

// The root is depth 0 and each array element or object member value is one
// level deeper; a value deeper than MAX_DEPTH is not canonical.
export const MAX_DEPTH = 32;

/** The value or JSON text is outside canonical JSON (vectors: invalid_json). */
export class CanonicalError extends Error {
  constructor(message) {
    super(message);
    this.name = "CanonicalError";
  }
}

/** An object names the same key twice after unescaping (vectors: duplicate_key). */
export class DuplicateKeyError extends CanonicalError {
  constructor(message) {
    super(message);
    this.name = "DuplicateKeyError";
  }
}

/** A JSON float, kept apart from integers: new JsonFloat(1) encodes as 1.0. */
export class JsonFloat {
  constructor(value) {
    this.value = Number(value);
  }
  valueOf() {
    return this.value;
  }
}

// ---------------------------------------------------------------------------
// Decoding: strict JSON text to values

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const numberPattern = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
const simpleEscapes = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };

/**
 * Decodes JSON text (a Uint8Array of UTF-8, or a string) strictly. Throws
 * DuplicateKeyError for a repeated key and CanonicalError for anything else
 * outside canonical JSON.
 */
export function parse(input) {
  let text;
  if (typeof input === "string") {
    text = input;
  } else {
    try {
      text = utf8.decode(input);
    } catch {
      throw new CanonicalError("input is not valid UTF-8");
    }
  }
  if (loneSurrogate.test(text)) {
    throw new CanonicalError("input has an unpaired surrogate");
  }
  const p = new Parser(text);
  p.space();
  const value = p.value(0);
  p.space();
  if (p.pos !== text.length) p.fail("unexpected data after the JSON value");
  return value;
}

class Parser {
  constructor(text) {
    this.text = text;
    this.pos = 0;
  }

  fail(reason) {
    throw new CanonicalError(`${reason} at offset ${this.pos}`);
  }

  space() {
    const t = this.text;
    while (this.pos < t.length) {
      const c = t[this.pos];
      if (c !== " " && c !== "\t" && c !== "\n" && c !== "\r") return;
      this.pos++;
    }
  }

  value(depth) {
    if (depth > MAX_DEPTH) this.fail(`nesting deeper than ${MAX_DEPTH} levels`);
    const c = this.text[this.pos];
    if (c === "{") return this.object(depth);
    if (c === "[") return this.array(depth);
    if (c === '"') return this.string();
    if (c === "-" || (c >= "0" && c <= "9")) return this.number();
    for (const [word, v] of [["true", true], ["false", false], ["null", null]]) {
      if (this.text.startsWith(word, this.pos)) {
        this.pos += word.length;
        return v;
      }
    }
    return this.fail(c === undefined ? "unexpected end of input" : "unexpected character");
  }

  object(depth) {
    this.pos++; // {
    const obj = {};
    const seen = new Set();
    this.space();
    if (this.text[this.pos] === "}") {
      this.pos++;
      return obj;
    }
    for (;;) {
      this.space();
      if (this.text[this.pos] !== '"') this.fail("expected a string object key");
      const key = this.string();
      if (seen.has(key)) throw new DuplicateKeyError(`key ${JSON.stringify(key.slice(0, 40))} appears twice`);
      seen.add(key);
      this.space();
      if (this.text[this.pos] !== ":") this.fail("expected ':' after an object key");
      this.pos++;
      this.space();
      // defineProperty, so a key such as "__proto__" is an ordinary member.
      Object.defineProperty(obj, key, { value: this.value(depth + 1), enumerable: true, writable: true, configurable: true });
      this.space();
      const c = this.text[this.pos++];
      if (c === "}") return obj;
      if (c !== ",") this.fail("expected ',' or '}' in an object");
    }
  }

  array(depth) {
    this.pos++; // [
    const list = [];
    this.space();
    if (this.text[this.pos] === "]") {
      this.pos++;
      return list;
    }
    for (;;) {
      this.space();
      list.push(this.value(depth + 1));
      this.space();
      const c = this.text[this.pos++];
      if (c === "]") return list;
      if (c !== ",") this.fail("expected ',' or ']' in an array");
    }
  }

  string() {
    const t = this.text;
    this.pos++; // opening quote
    let out = "";
    let start = this.pos;
    for (;;) {
      if (this.pos >= t.length) this.fail("unterminated string");
      const c = t.charCodeAt(this.pos);
      if (c === 0x22) {
        out += t.slice(start, this.pos++);
        return out;
      }
      if (c < 0x20) this.fail("control character in string");
      if (c !== 0x5c) {
        this.pos++;
        continue;
      }
      out += t.slice(start, this.pos);
      out += this.escape();
      start = this.pos;
    }
  }

  escape() {
    const e = this.text[this.pos + 1];
    if (Object.hasOwn(simpleEscapes, e ?? "")) {
      this.pos += 2;
      return simpleEscapes[e];
    }
    if (e !== "u") this.fail("invalid escape");
    const hi = this.hex4(this.pos + 2);
    this.pos += 6;
    if (hi < 0xd800 || hi > 0xdfff) return String.fromCharCode(hi);
    // A surrogate escape must be a high one followed by an escaped low one.
    const lo = this.text.startsWith("\\u", this.pos) ? this.hex4(this.pos + 2) : -1;
    if (hi > 0xdbff || lo < 0xdc00 || lo > 0xdfff) this.fail("unpaired surrogate in \\u escape");
    this.pos += 6;
    return String.fromCharCode(hi, lo);
  }

  hex4(at) {
    const h = this.text.slice(at, at + 4);
    if (!/^[0-9a-fA-F]{4}$/.test(h)) this.fail("invalid \\u escape");
    return parseInt(h, 16);
  }

  number() {
    numberPattern.lastIndex = this.pos;
    const m = numberPattern.exec(this.text);
    if (m === null) this.fail("invalid number");
    this.pos += m[0].length;
    if (m[1] === undefined && m[2] === undefined) {
      const n = BigInt(m[0]);
      return n >= -Number.MAX_SAFE_INTEGER && n <= Number.MAX_SAFE_INTEGER ? Number(n) : n;
    }
    const f = Number(m[0]);
    if (!Number.isFinite(f)) this.fail("number does not fit a binary64 float");
    return new JsonFloat(f); // underflow rounds to 0 or -0, as in Go
  }
}

// ---------------------------------------------------------------------------
// Encoding: values to canonical JSON text

const escapes = new Map([
  ["\b", "\\b"], ["\t", "\\t"], ["\n", "\\n"], ["\f", "\\f"], ["\r", "\\r"], ['"', '\\"'], ["\\", "\\\\"],
]);

function encodeString(s) {
  if (loneSurrogate.test(s)) throw new CanonicalError("string has an unpaired surrogate");
  // Only '"', '\' and control characters are escaped, with UPPERCASE hex.
  return '"' + s.replace(/["\\\u0000-\u001f]/g, (c) =>
    escapes.get(c) ?? "\\u" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")) + '"';
}

// shortestDigits returns the shortest digits that read back as f (f > 0) and
// the decimal exponent of the first digit: 1234.5 -> ["12345", 3]. Number's
// toString gives the shortest round trip, as "1.2345e+3" or "1234.5".
function shortestDigits(f) {
  const [mantissa, exp = "0"] = String(f).split("e");
  const [whole, frac = ""] = mantissa.split(".");
  const digits = whole + frac;
  const stripped = digits.replace(/^0+/, "");
  const exponent = whole.length - 1 + Number(exp) - (digits.length - stripped.length);
  return [stripped.replace(/0+$/, "") || "0", exponent];
}

/**
 * Erlang float_to_binary(f, [short]): the shortest round-tripping digits, as a
 * plain decimal when that is no longer than scientific notation, always with a
 * fraction or an exponent.
 */
export function formatFloat(f) {
  if (!Number.isFinite(f)) throw new CanonicalError(`float ${f} has no JSON form`);
  if (f === 0) return Object.is(f, -0) ? "-0.0" : "0.0";
  const sign = f < 0 ? "-" : "";
  f = Math.abs(f);
  const [digits, exp] = shortestDigits(f);
  const len = digits.length;
  const p = exp - len + 1; // f = digits * 10**p
  const cost = String(exp).length + 2;
  if (p < 0) {
    if (exp >= 0) return sign + digits.slice(0, len + p) + "." + digits.slice(len + p);
    if (2 - p - len <= cost) return sign + "0." + "0".repeat(-p - len) + digits;
  } else if (cost + (len === 1 ? 1 : 0) >= p + 2 && f < 2 ** 53) {
    return sign + digits + "0".repeat(p) + ".0";
  }
  return sign + digits[0] + "." + (digits.slice(1) || "0") + "e" + exp;
}

function encodeNumber(n) {
  if (!Number.isFinite(n)) throw new CanonicalError(`number ${n} has no JSON form`);
  const text = String(n); // what JSON.stringify writes, and Cairn then reads
  return /[.e]/.test(text) ? formatFloat(n) : text;
}

// UTF-8 byte order of keys. For well-formed strings it is code point order,
// which differs from JavaScript's default UTF-16 order past U+D7FF.
function compareKeys(a, b) {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

function encodeValue(v, depth, out) {
  if (depth > MAX_DEPTH) throw new CanonicalError(`nesting deeper than ${MAX_DEPTH} levels`);
  if (v === null) {
    out.push("null");
  } else if (v === true || v === false) {
    out.push(String(v));
  } else if (typeof v === "string") {
    out.push(encodeString(v));
  } else if (typeof v === "number") {
    out.push(encodeNumber(v));
  } else if (typeof v === "bigint") {
    out.push(v.toString());
  } else if (v instanceof JsonFloat) {
    out.push(formatFloat(v.value));
  } else if (Array.isArray(v)) {
    out.push("[");
    v.forEach((item, i) => {
      if (i > 0) out.push(",");
      encodeValue(item, depth + 1, out);
    });
    out.push("]");
  } else if (typeof v === "object" && [Object.prototype, null].includes(Object.getPrototypeOf(v))) {
    out.push("{");
    Object.keys(v).sort(compareKeys).forEach((key, i) => {
      if (i > 0) out.push(",");
      out.push(encodeString(key), ":");
      encodeValue(v[key], depth + 1, out);
    });
    out.push("}");
  } else {
    throw new CanonicalError(`unsupported value ${typeof v === "object" ? v.constructor?.name : typeof v}`);
  }
}

/** The canonical encoding of v, as a string (write it as UTF-8). */
export function encode(v) {
  const out = [];
  encodeValue(v, 0, out);
  return out.join("");
}

/** Lowercase hex SHA-256 of a string (hashed as UTF-8) or bytes. */
export function hashBytes(data) {
  return createHash("sha256").update(typeof data === "string" ? Buffer.from(data, "utf8") : data).digest("hex");
}

/** Lowercase hex SHA-256 of the canonical encoding of v. */
export function hashValue(v) {
  return hashBytes(encode(v));
}

/** The canonical encoding of JSON text: parse, then encode. */
export function canonicalize(input) {
  return encode(parse(input));
}

// ---------------------------------------------------------------------------
// The hashes of the request contract (subjects.md, docs/canonical-json.md)

/** The object content_hash covers, with the defaults of fields left out. */
export function contentPayload(event) {
  return {
    artifact_ids: event.artifact_ids ?? [],
    content: event.content ?? null,
    tool: event.tool ?? null,
    truncated: event.truncated ?? false,
  };
}

/** content_hash of an event: the hash of {artifact_ids, content, tool, truncated}. */
export function contentHash(event) {
  return hashValue(contentPayload(event));
}

/** provenance_sha256 of an event: the hash of its provenance. */
export function provenanceSha256(event) {
  return hashValue(event.provenance ?? null);
}

/** A copy of event with content_hash and provenance_sha256 filled in. */
export function withHashes(event) {
  return { ...event, content_hash: contentHash(event), provenance_sha256: provenanceSha256(event) };
}

/** checkpoint_hash: the hash of a checkpoint persistence map without created_at. */
export function checkpointHash(checkpoint) {
  const rest = Object.fromEntries(Object.entries(checkpoint).filter(([k]) => k !== "created_at"));
  return hashValue(rest);
}
