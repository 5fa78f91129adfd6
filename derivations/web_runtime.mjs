// ---- the hand-written part (derivations/web_runtime.mjs): Python's values and arithmetic, solve()'s path ----
// No arithmetic of the model is here: first_*, rule_*, fields_* and outputs_* above are the package's own
// compiled Python functions, translated operation by operation into calls of P (Python's semantics).

/** An error of solve(): `type` is Python's exception class name (ValueError, TypeError, ...). */
export class SolveError extends Error {
  constructor(type, message) { super(message); this.type = type; this.name = type; }
}
const raise = (type, message) => { throw new SolveError(type, message); };
// the exceptions mlsysim_sym catches around its compiled checks (ArithmeticError, ValueError, TypeError)
const CAUGHT = new Set(["ZeroDivisionError", "OverflowError", "ValueError", "TypeError"]);

// ---- Python values: an int is a BigInt, a float a number, a list an array, a dict a Map, None null ----
/** The Python value a JSON caller would pass for a JavaScript value (derivations/web.py states the mapping);
 * undefined (and a function or a symbol, which JSON leaves out) is "not given". */
function fromJS(v) {
  if (typeof v === "number") {
    return (Number.isInteger(v) && Math.abs(v) < 1e21 && !Object.is(v, -0)) ? BigInt(v) : v;
  }
  if (typeof v === "bigint" || typeof v === "boolean" || typeof v === "string" || v === null) return v;
  if (v === undefined || typeof v === "function" || typeof v === "symbol") return undefined;
  if (Array.isArray(v)) return Array.from(v, (x) => { const y = fromJS(x); return y === undefined ? null : y; });
  const m = new Map();
  for (const k of Object.keys(v)) { const y = fromJS(v[k]); if (y !== undefined) m.set(k, y); }
  return m;
}

function pyType(v) {
  if (typeof v === "bigint") return "int";
  if (v instanceof Wide) return "Wide";
  if (typeof v === "number") return "float";
  if (typeof v === "boolean") return "bool";
  if (typeof v === "string") return "str";
  if (v === null || v === undefined) return "NoneType";
  if (Array.isArray(v)) return "list";
  return "dict";
}

// Python's repr of a float: the shortest round-trip digits, "1.0" for whole numbers, "1e-05" exponents
function pyFloat(x) {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (Object.is(x, -0)) return "-0.0";
  const a = Math.abs(x);
  if (a !== 0 && (a >= 1e16 || a < 1e-4)) {
    const [m, e] = x.toExponential().split("e");
    const n = parseInt(e, 10);
    return `${m}e${n < 0 ? "-" : "+"}${String(Math.abs(n)).padStart(2, "0")}`;
  }
  const s = String(x);
  return Number.isInteger(x) ? s + ".0" : s;
}

const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;
// Python's repr of a str: single quotes unless it holds ' and no ", escapes for the unprintable
function strRepr(s) {
  const q = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = q;
  for (const ch of s) {
    const c = ch.codePointAt(0);
    if (ch === q || ch === "\\") out += "\\" + ch;
    else if (ch === "\t") out += "\\t";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (c < 0x20 || c === 0x7f) out += "\\x" + c.toString(16).padStart(2, "0");
    else if (c < 0x7f || !UNPRINTABLE.test(ch)) out += ch;
    else if (c <= 0xff) out += "\\x" + c.toString(16).padStart(2, "0");
    else if (c <= 0xffff) out += "\\u" + c.toString(16).padStart(4, "0");
    else out += "\\U" + c.toString(16).padStart(8, "0");
  }
  return out + q;
}

function pyRepr(v) {
  if (typeof v === "string") return strRepr(v);
  if (typeof v === "bigint") return String(v);
  if (typeof v === "number") return pyFloat(v);
  if (typeof v === "boolean") return v ? "True" : "False";
  if (v === null || v === undefined) return "None";
  if (Array.isArray(v)) return "[" + v.map(pyRepr).join(", ") + "]";
  return "{" + [...v].map(([k, x]) => `${pyRepr(k)}: ${pyRepr(x)}`).join(", ") + "}";
}
// str(): a str as itself, anything else as its repr
const pyStr = (v) => (typeof v === "string" ? v : pyRepr(v));

function truth(x) {
  if (x instanceof Wide) return x.m !== 0;
  if (typeof x === "number") return x !== 0;            // NaN is true, as in Python
  if (typeof x === "bigint") return x !== 0n;
  if (typeof x === "string" || Array.isArray(x)) return x.length > 0;
  if (x instanceof Map) return x.size > 0;
  return Boolean(x);
}
const isNumber = (x) => typeof x === "bigint" || typeof x === "number" || typeof x === "boolean" || x instanceof Wide;

// Python's ==: numbers (ints, floats, bools) by value, a str with a str, anything else only with itself
function pyEq(a, b) {
  if (anyWide(a, b) && isNumber(a) && isNumber(b)) return W.cmp(a, b) === 0;
  if (isNumber(a) && isNumber(b)) return a == b;       // eslint-disable-line eqeqeq -- exact across BigInt
  if (typeof a === "string" || typeof b === "string") return a === b;
  if (a === null || b === null) return a === b;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => pyEq(x, b[i]));
  if (a instanceof Map && b instanceof Map) {
    return a.size === b.size && [...a].every(([k, x]) => b.has(k) && pyEq(x, b.get(k)));
  }
  return false;
}

// ---- Python's arithmetic (CPython 3's int and float), the one place the module computes ----
const OPS = { add: "+", sub: "-", mul: "*", div: "/", floordiv: "//", mod: "%", pow: "** or pow()" };
function operand(x, op, a, b) {
  if (typeof x === "boolean") return x ? 1n : 0n;
  if (typeof x === "bigint" || typeof x === "number") return x;
  return raise("TypeError", `unsupported operand type(s) for ${OPS[op]}: '${pyType(a)}' and '${pyType(b)}'`);
}
function toFloat(x) {
  if (typeof x === "number") return x;
  const f = Number(x);
  if (!Number.isFinite(f)) raise("OverflowError", "int too large to convert to float");
  return f;
}
const bitLength = (n) => (n === 0n ? 0 : n.toString(2).length);
// int / int, correctly rounded as CPython's long_true_divide
function intDiv(a, b) {
  if (b === 0n) raise("ZeroDivisionError", "division by zero");
  const neg = (a < 0n) !== (b < 0n);
  a = a < 0n ? -a : a; b = b < 0n ? -b : b;
  if (a <= 2n ** 53n && b <= 2n ** 53n) { const q = Number(a) / Number(b); return neg ? -q : q; }
  const shift = 64 - (bitLength(a) - bitLength(b));
  const num = shift > 0 ? a << BigInt(shift) : a;
  const den = shift < 0 ? b << BigInt(-shift) : b;
  let q = num / den;
  q = (q << 1n) | (num % den === 0n ? 0n : 1n);           // a sticky bit for the rounding
  let r = Number(q), e = -(shift + 1);
  while (e !== 0) { const step = Math.max(-1000, Math.min(1000, e)); r *= 2 ** step; e -= step; }
  if (!Number.isFinite(r)) raise("OverflowError", "integer division result too large for a float");
  return neg ? -r : r;
}
function floorDivBig(a, b) {
  const q = a / b;
  return (a % b !== 0n && ((a < 0n) !== (b < 0n))) ? q - 1n : q;
}
function floatPow(x, y) {
  if (y === 0) return 1;
  if (Number.isNaN(x)) return x;
  if (Number.isNaN(y)) return x === 1 ? 1 : y;
  if (x === 0 && y < 0) raise("ZeroDivisionError", "0.0 cannot be raised to a negative power");
  if (x < 0 && Number.isFinite(x) && Number.isFinite(y) && !Number.isInteger(y)) {
    raise("TypeError", "negative number raised to a fractional power (a complex number)");
  }
  const r = x ** y;
  if (!Number.isFinite(r) && Number.isFinite(x) && Number.isFinite(y)) {
    raise("OverflowError", "(34, 'Numerical result out of range')");
  }
  return r;
}
// ---- mlsysim_sym.wide: a float's 53-bit significand with an exponent that cannot overflow (mpmath's mpf at
// prec 53), for the outputs whose float arithmetic overflows part-way (wide.evaluate) ----
class Wide { constructor(m, e) { this.m = m; this.e = e; } }        // m in [1, 2) (or 0, NaN, +-Infinity) x 2**e
function frexp(x) {
  if (x === 0 || !Number.isFinite(x)) return [x, 0];
  let e = 0;
  while (Math.abs(x) >= 2 ** 500) { x /= 2 ** 500; e += 500; }
  while (Math.abs(x) < 2 ** -500) { x *= 2 ** 500; e -= 500; }
  while (Math.abs(x) >= 2) { x /= 2; e += 1; }
  while (Math.abs(x) < 1) { x *= 2; e -= 1; }
  return [x, e];
}
const wideOf = (x, e = 0) => { const [m, k] = frexp(x); return new Wide(m, Number.isFinite(m) && m !== 0 ? k + e : 0); };
function toWide(x) {
  if (x instanceof Wide) return x;
  if (typeof x === "boolean") return wideOf(x ? 1 : 0);
  if (typeof x === "number") return wideOf(x);
  if (typeof x === "bigint") {
    const a = x < 0n ? -x : x;
    const bits = bitLength(a);
    if (bits <= 1000) return wideOf(Number(x));
    const shift = bits - 64;
    const top = (a >> BigInt(shift)) | ((a & ((1n << BigInt(shift)) - 1n)) === 0n ? 0n : 1n);
    return wideOf(x < 0n ? -Number(top) : Number(top), shift);
  }
  return raise("TypeError", `cannot create mpf from ${pyRepr(x)}`);
}
function scale(x, e) {
  while (e !== 0 && x !== 0 && Number.isFinite(x)) { const k = Math.max(-1000, Math.min(1000, e)); x *= 2 ** k; e -= k; }
  return x;
}
const wideFloat = (w) => scale(w.m, w.e);
const special = (w) => w.m === 0 || !Number.isFinite(w.m);
const W = {
  mul(a, b) { a = toWide(a); b = toWide(b);
    if (special(a) || special(b)) return wideOf((special(a) ? a.m : Math.sign(a.m)) * (special(b) ? b.m : Math.sign(b.m)));
    return wideOf(a.m * b.m, a.e + b.e); },
  div(a, b) { a = toWide(a); b = toWide(b);
    if (b.m === 0) raise("ZeroDivisionError", "division by zero");
    if (special(a) || special(b)) return wideOf((special(a) ? a.m : Math.sign(a.m)) / (special(b) ? b.m : Math.sign(b.m)));
    return wideOf(a.m / b.m, a.e - b.e); },
  add(a, b) { a = toWide(a); b = toWide(b);
    if (!Number.isFinite(a.m) || !Number.isFinite(b.m)) return wideOf(a.m + b.m);
    if (a.m === 0) return b;
    if (b.m === 0) return a;
    if (a.e < b.e) [a, b] = [b, a];
    const d = a.e - b.e;
    return d > 60 ? a : wideOf(a.m * 2 ** d + b.m, b.e); },
  neg(a) { a = toWide(a); return new Wide(-a.m, a.e); },
  cmp(a, b) {                                       // -1, 0, 1, or NaN (unordered)
    a = toWide(a); b = toWide(b);
    if (Number.isNaN(a.m) || Number.isNaN(b.m)) return NaN;
    if (special(a) || special(b) || Math.sign(a.m) !== Math.sign(b.m)) {
      const x = special(a) ? a.m : Math.sign(a.m), y = special(b) ? b.m : Math.sign(b.m);
      if (x !== y || special(a) && special(b)) return x < y ? -1 : x > y ? 1 : 0;
    }
    const s = Math.sign(a.m);
    if (a.e !== b.e) return a.e < b.e ? -s : s;
    return a.m < b.m ? -1 : a.m > b.m ? 1 : 0;
  },
  round(a, how) { a = toWide(a);
    if (special(a) || a.e >= 52) return a;
    return wideOf(how(scale(a.m, a.e))); },
  int(a) { a = toWide(a);
    if (Number.isNaN(a.m)) raise("ValueError", "cannot convert float NaN to integer");
    if (!Number.isFinite(a.m)) raise("OverflowError", "cannot convert float infinity to integer");
    if (a.e >= 52) return BigInt(scale(a.m, 52)) * 2n ** BigInt(a.e - 52);
    return BigInt(Math.trunc(scale(a.m, a.e))); },
};
const anyWide = (a, b) => a instanceof Wide || b instanceof Wide;

const P = {
  add(a, b) { if (anyWide(a, b)) return W.add(a, b); const x = operand(a, "add", a, b), y = operand(b, "add", a, b);
    return typeof x === "bigint" && typeof y === "bigint" ? x + y : toFloat(x) + toFloat(y); },
  sub(a, b) { if (anyWide(a, b)) return W.add(a, W.neg(b)); const x = operand(a, "sub", a, b), y = operand(b, "sub", a, b);
    return typeof x === "bigint" && typeof y === "bigint" ? x - y : toFloat(x) - toFloat(y); },
  mul(a, b) { if (anyWide(a, b)) return W.mul(a, b); const x = operand(a, "mul", a, b), y = operand(b, "mul", a, b);
    return typeof x === "bigint" && typeof y === "bigint" ? x * y : toFloat(x) * toFloat(y); },
  div(a, b) {
    if (anyWide(a, b)) return W.div(a, b);
    const x = operand(a, "div", a, b), y = operand(b, "div", a, b);
    if (typeof x === "bigint" && typeof y === "bigint") return intDiv(x, y);
    const fx = toFloat(x), fy = toFloat(y);
    if (fy === 0) raise("ZeroDivisionError", "float division by zero");
    return fx / fy;
  },
  floordiv(a, b) {
    if (anyWide(a, b)) return W.round(W.div(a, b), Math.floor);
    const x = operand(a, "floordiv", a, b), y = operand(b, "floordiv", a, b);
    if (typeof x === "bigint" && typeof y === "bigint") {
      if (y === 0n) raise("ZeroDivisionError", "integer division or modulo by zero");
      return floorDivBig(x, y);
    }
    const vx = toFloat(x), wx = toFloat(y);
    if (wx === 0) raise("ZeroDivisionError", "float floor division by zero");
    // CPython's _float_div_mod (a NaN is true there, as everywhere in Python)
    const mod = vx % wx;
    let div = (vx - mod) / wx;
    if (mod !== 0 && (wx < 0) !== (mod < 0)) div -= 1.0;
    if (div !== 0) { let f = Math.floor(div); if (div - f > 0.5) f += 1.0; return f; }
    const q = vx / wx;
    return q < 0 || Object.is(q, -0) ? -0 : 0;
  },
  mod(a, b) {
    if (anyWide(a, b)) {          // mlsysim_sym.wide's %: the remainder with the sign of the divisor
      if (W.cmp(b, 0) === 0) raise("ZeroDivisionError", "float modulo");
      return W.add(a, W.neg(W.mul(b, W.round(W.div(a, b), Math.floor))));
    }
    const x = operand(a, "mod", a, b), y = operand(b, "mod", a, b);
    if (typeof x === "bigint" && typeof y === "bigint") {
      if (y === 0n) raise("ZeroDivisionError", "integer division or modulo by zero");
      const r = x % y;
      return (r !== 0n && ((r < 0n) !== (y < 0n))) ? r + y : r;
    }
    const vx = toFloat(x), wx = toFloat(y);
    if (wx === 0) raise("ZeroDivisionError", "float modulo");
    let mod = vx % wx;
    if (mod !== 0) { if ((wx < 0) !== (mod < 0)) mod += wx; } else mod = wx < 0 ? -0 : 0;
    return mod;
  },
  pow(a, b) {
    if (anyWide(a, b)) {
      const n = W.cmp(b, 0) === 0 ? 0 : W.cmp(b, 1) === 0 ? 1 : W.cmp(b, 2) === 0 ? 2 : null;
      if (n === 0) return wideOf(1);
      if (n === 1) return toWide(a);
      if (n === 2) return W.mul(a, a);
      return wideOf(wideFloat(toWide(a)) ** wideFloat(toWide(b)));
    }
    const x = operand(a, "pow", a, b), y = operand(b, "pow", a, b);
    if (typeof x === "bigint" && typeof y === "bigint") {
      if (y >= 0n) return x ** y;
      return floatPow(toFloat(x), toFloat(y));
    }
    return floatPow(toFloat(x), toFloat(y));
  },
  neg(a) { if (a instanceof Wide) return W.neg(a); const x = operand(a, "sub", a, a); return -x; },
  pos(a) { if (a instanceof Wide) return a; return operand(a, "add", a, a); },
  truth,
  and(a, b) { return truth(a) ? b() : a; },
  or(a, b) { return truth(a) ? a : b(); },
  eq: pyEq,
  ne: (a, b) => !pyEq(a, b),
  cmp(a, b, op) {
    if (anyWide(a, b) && isNumber(a) && isNumber(b)) {
      const c = W.cmp(a, b);
      return op === "<" ? c < 0 : op === ">" ? c > 0 : op === "<=" ? c <= 0 : c >= 0;
    }
    if (!isNumber(a) || !isNumber(b)) {
      const sym = { "<": "<", ">": ">", "<=": "<=", ">=": ">=" }[op];
      if (!(typeof a === "string" && typeof b === "string")) {
        raise("TypeError", `'${sym}' not supported between instances of '${pyType(a)}' and '${pyType(b)}'`);
      }
    }
    switch (op) {
      case "<": return a < b;
      case ">": return a > b;
      case "<=": return a <= b;
      default: return a >= b;
    }
  },
  isfinite(x) {
    if (x instanceof Wide) return Number.isFinite(wideFloat(x));
    if (typeof x === "boolean") return true;
    if (typeof x === "bigint") { toFloat(x); return true; }
    if (typeof x === "number") return Number.isFinite(x);
    return raise("TypeError", `must be real number, not ${pyType(x)}`);
  },
  int(x) {
    if (x instanceof Wide) return W.int(x);
    if (typeof x === "boolean") return x ? 1n : 0n;
    if (typeof x === "bigint") return x;
    if (typeof x === "number") {
      if (Number.isNaN(x)) raise("ValueError", "cannot convert float NaN to integer");
      if (!Number.isFinite(x)) raise("OverflowError", "cannot convert float infinity to integer");
      return BigInt(Math.trunc(x));
    }
    return raise("TypeError", `int() argument must be a string, a bytes-like object or a real number, not '${pyType(x)}'`);
  },
  float(x) { return x instanceof Wide ? wideFloat(x) : toFloat(operand(x, "add", x, x)); },
  ceil(x) { return x instanceof Wide ? W.round(x, Math.ceil) : typeof x === "number" ? P.int(Math.ceil(x)) : P.int(x); },
  floor(x) { return x instanceof Wide ? W.round(x, Math.floor) : typeof x === "number" ? P.int(Math.floor(x)) : P.int(x); },
  sqrt(x) { const f = toFloat(operand(x, "pow", x, x)); if (f < 0) raise("ValueError", "math domain error");
    return Math.sqrt(f); },
  abs(x) { const y = operand(x, "add", x, x); return y < 0 ? -y : y; },
  // Python's max/min: the first of the largest (smallest) by > (<): a NaN argument loses to a number before it
  max(...a) { let m = a[0]; for (let i = 1; i < a.length; i++) if (P.cmp(a[i], m, ">")) m = a[i]; return m; },
  min(...a) { let m = a[0]; for (let i = 1; i < a.length; i++) if (P.cmp(a[i], m, "<")) m = a[i]; return m; },
};
// the elasticities (printed by sympy's JavaScript printer, on plain numbers)
function pymax(...a) { let m = a[0]; for (let i = 1; i < a.length; i++) if (a[i] > m) m = a[i]; return m; }
function pymin(...a) { let m = a[0]; for (let i = 1; i < a.length; i++) if (a[i] < m) m = a[i]; return m; }
function pymod(a, b) { const r = a % b; return (r !== 0 && (r < 0) !== (b < 0)) ? r + b : r; }
const plainNumber = (x) => (typeof x === "bigint" ? Number(x) : typeof x === "boolean" ? Number(x)
  : x === null ? NaN : x);

// ---- difflib.get_close_matches (Python's standard library), for the catalog's "close names" ----
function matchingSize(a, b) {
  const b2j = new Map();
  b.forEach((e, i) => { if (!b2j.has(e)) b2j.set(e, []); b2j.get(e).push(i); });
  if (b.length >= 200) {                         // SequenceMatcher's autojunk: popular elements leave b2j
    const ntest = Math.floor(b.length / 100) + 1;
    for (const [e, idx] of [...b2j]) if (idx.length > ntest) b2j.delete(e);
  }
  function longest(alo, ahi, blo, bhi) {
    let besti = alo, bestj = blo, bestsize = 0, j2len = new Map();
    for (let i = alo; i < ahi; i++) {
      const next = new Map();
      for (const j of b2j.get(a[i]) || []) {
        if (j < blo) continue;
        if (j >= bhi) break;
        const k = (j2len.get(j - 1) || 0) + 1;
        next.set(j, k);
        if (k > bestsize) { besti = i - k + 1; bestj = j - k + 1; bestsize = k; }
      }
      j2len = next;
    }
    while (besti > alo && bestj > blo && a[besti - 1] === b[bestj - 1]) { besti--; bestj--; bestsize++; }
    while (besti + bestsize < ahi && bestj + bestsize < bhi && a[besti + bestsize] === b[bestj + bestsize]) bestsize++;
    return [besti, bestj, bestsize];
  }
  let total = 0;
  const queue = [[0, a.length, 0, b.length]];
  while (queue.length) {
    const [alo, ahi, blo, bhi] = queue.pop();
    const [i, j, k] = longest(alo, ahi, blo, bhi);
    if (k) {
      total += k;
      if (alo < i && blo < j) queue.push([alo, i, blo, j]);
      if (i + k < ahi && j + k < bhi) queue.push([i + k, ahi, j + k, bhi]);
    }
  }
  return total;
}
function closeMatches(word, possibilities, n = 6, cutoff = 0.5) {
  const b = Array.from(word);
  const counts = new Map();
  for (const e of b) counts.set(e, (counts.get(e) || 0) + 1);
  const out = [];
  for (const x of possibilities) {
    const a = Array.from(x);
    const length = a.length + b.length;
    const ratio = (m) => (length ? 2.0 * m / length : 1.0);
    if (ratio(Math.min(a.length, b.length)) < cutoff) continue;
    const avail = new Map();
    let quick = 0;
    for (const e of a) {
      const have = avail.has(e) ? avail.get(e) : (counts.get(e) || 0);
      avail.set(e, have - 1);
      if (have > 0) quick++;
    }
    if (ratio(quick) < cutoff) continue;
    const r = ratio(matchingSize(a, b));
    if (r >= cutoff) out.push([r, x]);
  }
  // heapq.nlargest on (score, name): the best first, ties by the larger name
  out.sort((p, q) => (q[0] - p[0]) || (p[1] < q[1] ? 1 : p[1] > q[1] ? -1 : 0));
  return out.slice(0, n).map((p) => p[1]);
}

// mlsysim_sym.catalog's lookup: a KeyError whose message names the close names, or every name
function lookup(name, what) {
  const table = what === "workload" ? DATA.workloads : DATA.fleets;
  if (["list", "dict"].includes(pyType(name))) {      // mlsysim_sym.inputs._record: one model, one fleet
    raise("TypeError", `${what === "workload" ? "model" : "fleet"} must be one ${what} (a catalog name, a plan ` +
      `file, a record or an mlsysim object), got a ${pyType(name)}; to compare several, price each in turn`);
  }
  if (typeof name !== "string") {                     // None, a number or a bool: no name, record or object
    raise("TypeError", `${what === "workload" ? "model" : "fleet"} must be a ${what} (a catalog name, a plan ` +
      `file, a record or an mlsysim object), got ${pyType(name)}`);
  }
  if (name.startsWith(NAMES.modern_prefix)) {       // the modern catalog's (mlsysim_sym.modern._find)
    if (Object.prototype.hasOwnProperty.call(table, name)) return table[name];
    const keys = NAMES[`modern_${what}s`];
    const close = closeNames(name, keys);
    const hint = close.length ? `; close names: ${close.join(", ")}` : `; known names: ${keys.join(", ")}`;
    return raise("KeyError", strRepr(`unknown modern ${what === "workload" ? "architecture" : "fleet"} ` +
      `${strRepr(name)}${hint}`));
  }
  if (NAMES.file_endings.some((e) => name.endsWith(e))) {
    raise("ValueError", `${what} ${strRepr(name)}: the calculator reads no files (a plan file is read by the ` +
      "Python package and the command line)");
  }
  if (Object.prototype.hasOwnProperty.call(table, name)) return table[name];
  const keys = NAMES[what];
  const close = closeNames(name, keys);
  const hint = close.length ? `; close names: ${close.join(", ")}` : `; known names: ${keys.join(", ")}`;
  // the modern catalog's names, typed without their prefix (mlsysim_sym.inputs._record), named with it
  const modern = closeNames(NAMES.modern_prefix + name, NAMES[`modern_${what}s`]);
  const also = modern.length ? `; in the modern catalog: ${modern.join(", ")}` : "";
  return raise("KeyError", strRepr(`unknown ${what} ${strRepr(name)}${hint}${also}`));
}

/** catalog.close_names: close spellings, then names that contain the name or that it contains, at most
 * catalog.CLOSE_NAMES. */
function closeNames(name, keys) {
  const close = closeMatches(name, keys, NAMES.close_names);
  const low = name.toLowerCase();
  for (const k of keys) {
    if (low && (k.toLowerCase().includes(low) || low.includes(k.toLowerCase())) && !close.includes(k)) close.push(k);
  }
  return close.slice(0, NAMES.close_names);
}

/** The bundled catalog: workload and cluster names, with their display names. */
export const catalog = {
  workloads: Object.fromEntries(Object.entries(DATA.workloads).map(([k, w]) => [k, w.name])),
  fleets: Object.fromEntries(Object.entries(DATA.fleets).map(([k, f]) => [k, f.name])),
};

/** solve()'s keyword arguments and their defaults (mlsysim 0.3.0's; the extended model's neutral; null, solve()'s
 * None, where the record gives it: an architecture card's kv_fraction), precision included: the parameter table's
 * keywords, in solve()'s order (numbers as JavaScript numbers). */
export const defaults = Object.fromEntries([["precision", "fp16"],
  ...Object.entries(KEYWORDS).map(([k, p]) => [k, NAMES.from_record_keywords.includes(k) ? null
    : typeof p.default === "bigint" ? Number(p.default) : p.default])]);

/**
 * Price one training step: mlsysim_sym's DistributedModel(fidelity).solve(model, fleet, **kwargs), with
 * `kwargs.fidelity` the model's fidelity. Every JavaScript value is taken as the Python value a JSON caller
 * would pass (derivations/web.py); throws a SolveError with Python's exception type and message where Python
 * raises, in Python's order; returns the result (SI units) with `warnings`.
 */
export function solve(model, fleet, kwargs) {
  const s = prepare(model, fleet, kwargs);
  return result(s);
}

/** The smallest fleet MFU whose elasticities the page computes: below it (a congestion factor of 1e200) the
 * derivatives underflow double precision and come out 0 or wrong, where Python's sensitivities() are exact. */
export const SMALLEST_MFU = 1e-100;

/**
 * The elasticities of the fleet MFU at a configuration (d ln MFU / d ln x, in the regime of the point), for
 * every continuous parameter, largest first: [{argument, label, symbol, elasticity}]. Throws a ValueError
 * SolveError where the MFU is below SMALLEST_MFU.
 */
export function sensitivities(model, fleet, kwargs) {
  const s = prepare(model, fleet, kwargs);
  const { outArgs, meta, fns } = s;
  const mfu = result(s).mfu;
  if (!(mfu >= SMALLEST_MFU)) {
    raise("ValueError", `the elasticities are not computed at an MFU below ${SMALLEST_MFU} (here ${mfu.toExponential(2)}): its ` +
      "derivatives underflow double precision (Python's sensitivities() computes them exactly)");
  }
  const e = fns.elasticities(...outArgs.map(plainNumber));
  return meta.elasticities.map((name, i) => ({ argument: name, label: LABELS[name].label,
    symbol: LABELS[name].symbol, elasticity: e[i] }))
    .filter((r) => Number.isFinite(r.elasticity))
    .sort((a, b) => Math.abs(b.elasticity) - Math.abs(a.elasticity));
}

/** The equations of the step in the book's notation, for the model's variant: [[quantity, LaTeX], ...]. */
export function equations(model, fleet, kwargs) {
  return META[prepare(model, fleet, kwargs, false).variant].equations;
}

/** Symbols and words of solve()'s arguments: {argument: {label, symbol, latex, unit}}. */
export const labels = LABELS;

const EXTENDED = NAMES.extended;
const FROM_RECORD = NAMES.from_record_keywords;

// arguments.refuse_extended's display of a value: repr, a list as numpy's sorted distinct values (np.unique of
// np.asarray: bools, ints or floats as numbers; strings with numbers as strings; with None, a list or a dict, Python
// objects sorted by numpy's insertion sort for short arrays, which compares them with <)
const INT64 = 2n ** 63n;
function shown(v, p) {
  if (!Array.isArray(v)) return pyRepr(v);
  let values;
  const objects = v.some((x) => x === null || Array.isArray(x) || x instanceof Map
    || (typeof x === "bigint" && (x >= INT64 || x < -INT64)));
  if (objects) {
    values = [...v];
    for (let i = 1; i < values.length; i++) {
      const x = values[i];
      let j = i;
      while (j > 0 && truth(P.cmp(x, values[j - 1], "<"))) { values[j] = values[j - 1]; j--; }
      values[j] = x;
    }
    values = values.filter((x, i) => i === 0 || !pyEq(x, values[i - 1]));
  } else if (v.some((x) => typeof x === "string")) {
    values = [...new Set(v.map(pyStr))].sort();
  } else {
    const bools = v.length > 0 && v.every((x) => typeof x === "boolean");
    const floats = v.length === 0 || v.some((x) => typeof x === "number");
    const xs = v.map((x) => (bools ? x : floats ? toFloat(operand(x, "add", x, x)) : operand(x, "add", x, x)));
    values = [];
    for (const x of xs) if (!values.some((y) => pyEq(y, x) || (Number.isNaN(x) && Number.isNaN(y)))) values.push(x);
    values.sort((a, b) => (Number.isNaN(a) ? 1 : Number.isNaN(b) ? -1 : a < b ? -1 : a > b ? 1 : 0));
  }
  if (p.kind === "count") {
    values = values.map((x) => {
      if (typeof x === "string") {
        if (!/^\s*[+-]?\d+(_\d+)*\s*$/.test(x)) raise("ValueError", `invalid literal for int() with base 10: ${strRepr(x)}`);
        return BigInt(x.trim().replace(/_/g, ""));
      }
      return P.int(x);
    });
  } else if (p.kind === "flag") values = values.map(truth);
  return pyRepr(values);
}

function prepare(model, fleet, kwargs, checked = true) {
  // the JavaScript values as Python's
  model = fromJS(model); fleet = fromJS(fleet);
  if (model === undefined) model = null;
  if (fleet === undefined) fleet = null;
  let kw = kwargs === undefined ? new Map() : fromJS(kwargs);
  if (kw === undefined) kw = new Map();
  // DistributedModel(fidelity=...): the model choice
  let fidelity = "mlsysim";
  if (kw instanceof Map && kw.has("fidelity")) { fidelity = kw.get("fidelity"); kw = new Map(kw); kw.delete("fidelity"); }
  if (typeof fidelity !== "string" || !NAMES.fidelities.includes(fidelity)) {
    raise("ValueError", `fidelity must be one of ${NAMES.fidelities.map(strRepr).join(", ")}, got ${pyRepr(fidelity)}`);
  }
  const extended = fidelity === "extended";
  // .solve(model, fleet, **kwargs): Python binds the keywords first
  if (!(kw instanceof Map)) {
    raise("TypeError", `${SIGNATURE.qualified}() argument after ** must be a mapping, not ${pyType(kw)}`);
  }
  for (const k of kw.keys()) {
    if (SIGNATURE.positional.includes(k)) raise("TypeError", `${SIGNATURE.name}() got multiple values for argument '${k}'`);
    if (!SIGNATURE.keywords.includes(k) && NAMES.fields.includes(k)) {
      // Python's solve() sets a record field for the call (count=16); the page prices the catalogs' records as
      // they are, and says so rather than price another configuration
      raise("TypeError", `${SIGNATURE.name}(): ${k} is a field of the workload or the cluster, which this page ` +
        `does not set (it prices the catalogs' records as they are); Python's solve(${k}=...) sets it`);
    }
    if (!SIGNATURE.keywords.includes(k)) raise("TypeError", `${SIGNATURE.name}() got an unexpected keyword argument '${k}'`);
  }
  const w = lookup(model, "workload");
  const f = lookup(fleet, "fleet");
  // the keywords as given, their defaults where not (a record's for a None where it gives one)
  const given = {};
  // (a keyword whose default a record gives defaults to None, as in solve()'s signature)
  for (const [k, p] of Object.entries(KEYWORDS)) given[k] = kw.has(k) ? kw.get(k) : FROM_RECORD.includes(k) ? null : p.default;
  for (const k of FROM_RECORD) {
    if (given[k] === null) {
      const own = extended ? w.record[k] : null;
      given[k] = own === null || own === undefined ? KEYWORDS[k].default : own;
    }
  }
  const precision = kw.has("precision") ? kw.get("precision") : "fp16";
  // price(): a switch given as text, which would read as true ("no" is), is refused, and so are several values for
  // one configuration ([false] is true) (arguments.refuse_text)
  for (const k of FLAG_KEYWORDS) {
    const v = given[k];
    if (typeof v === "string") raise("TypeError", `${k} must be a bool (True or False, or 1 or 0), got str ${pyRepr(v)}`);
    if (Array.isArray(v) || pyType(v) === "dict") {
      raise("TypeError", `${k} must be a bool (True or False, or 1 or 0), got ${pyType(v)} ${pyRepr(v)}; one ` +
        "configuration takes one value (a sweep takes a list)");
    }
  }
  // price(): the extended model's switches, a bool or 0 or 1 (arguments.check_switches)
  if (extended) {
    for (const k of NAMES.strict_switches) {
      const v = given[k];
      if (typeof v === "boolean") continue;
      if (typeof v !== "bigint" && typeof v !== "number") {
        raise("TypeError", `${k} must be a bool (True or False, or 1 or 0), got ${pyType(v)} ${pyRepr(v)}`);
      }
      if (!pyEq(v, 0n) && !pyEq(v, 1n)) raise("ValueError", `${k} must be True or False (or 1 or 0), got ${pyRepr(v)}`);
    }
  }
  // price(): mlsysim's model takes the extended model's keywords at their neutral values only
  if (!extended) {
    for (const k of EXTENDED) {
      const p = KEYWORDS[k], v = given[k], d = p.default;
      if (pyType(v) === pyType(d) && pyEq(v, d)) continue;
      const neutral = p.kind === "flag" ? truth(v) === truth(d) : (typeof v !== "boolean" && pyEq(v, d));
      if (!neutral) {
        raise("ValueError", `${k}=${shown(v, p)} is an argument of the extended model (mlsysim 0.3.0 has no ` +
          `${p.label}); pass fidelity='extended'`);
      }
    }
  }
  // inputs.lower_arguments: the switches as 0/1, seq_len unread (0) off transformers without TP or EP
  const lowered = { precision, ...given };
  for (const k of FLAG_KEYWORDS) lowered[k] = truth(lowered[k]) ? 1n : 0n;
  if (!w.transformer && pyEq(lowered.tp_size, 1n) && pyEq(lowered.ep_size, 1n)) lowered.seq_len = 0n;
  // checks.facts: the precision's
  const notString = typeof precision !== "string";
  const key = notString ? null : precision.toLowerCase();
  const unsupported = !notString && !Object.prototype.hasOwnProperty.call(PRECISION_BYTES, key);
  const k2 = (!notString && !unsupported) ? key : "fp16";
  const fallback = !notString && !unsupported && !w.transformer && f.by_precision[k2].fallback;
  const facts = [notString, unsupported, fallback];
  const fx = { precision, precision_type: pyType(precision), precision_key: (notString || unsupported) ? null : key,
    accelerator: f.accelerator, available: f.available };
  const wp = w.by_precision[k2];
  const variant = wp.variant + (extended ? "_extended" : "");
  if (!checked) return { variant };
  const meta = META[variant];
  const fns = VARIANT_FUNCTIONS[variant];
  // the values of every raw argument (a record's absent field: NaN, as checks._static_named)
  const values = { ...DATA.constants, ...f.fields, peak_flops: f.by_precision[k2].peak_flops };
  for (const [k, v] of Object.entries(wp)) if (k !== "variant") values[k] = v;
  const named = { ...values };
  for (const [k, v] of Object.entries(named)) if (v === null) named[k] = NaN;
  Object.assign(named, lowered);
  FACT_NAMES.forEach((n, i) => { named[n] = facts[i]; });
  const at = (a) => (a in named ? named[a] : NaN);
  const warnings = [];
  const say = (i) => {
    const r = meta.rules[i];
    const fields = {};
    if (r.fn) {
      const got = RULE_FUNCTIONS[r.fn](...r.field_args.map(at));
      r.fields.forEach((label, j) => { fields[label] = got[j]; });
    }
    const all = { ...lowered, ...fx, ...fields };
    const text = r.message.replace(/\{(\w+)\}/g, (_, k) => pyStr(all[k]));
    if (r.warning) warnings.push(text);
    else raise(r.error, text);
  };
  // checks.check: the compiled checks in one call on plain numbers, else (or where that call fails) the rules in
  // order, each argument's type checked where mlsysim would trip on it
  const vector = meta.first_args.map((n) => (FACT_NAMES.includes(n) ? (named[n] ? 1n : 0n) : at(n)));
  let verdict = null;
  if (vector.every((x) => typeof x === "bigint" || typeof x === "number")) {
    try {
      const [broken, ...warned] = fns.first(...vector);
      verdict = [Number(broken), meta.warnings.filter((i, j) => truth(warned[j]))];
    } catch (e) {
      if (!(e instanceof SolveError && CAUGHT.has(e.type))) throw e;
    }
  }
  if (verdict !== null) {
    const [broken, fired] = verdict;
    for (const i of fired) if (broken === -1 || i < broken) say(i);
    if (broken !== -1) say(broken);
  } else {
    meta.rules.forEach((r, i) => {
      if (r.numeric) {
        for (const name of r.reads) {
          if (!(name in lowered)) continue;
          const v = lowered[name];
          if (!isNumber(v)) raise("TypeError", `${name} must be a real number, got ${pyType(v)}`);
          if (typeof v === "boolean" && !(r.bools || (!w.transformer && name === "seq_len"))) {
            raise("TypeError", `${name} must be a number, got bool`);
          }
        }
      }
      let broken;
      try {
        broken = truth(RULE_FUNCTIONS[`rule_${variant}_${i}`](...r.args.map(at))[0]);
      } catch (e) {
        if (e instanceof SolveError && e.type === "OverflowError") beyond(lowered, r.reads);
        throw e;
      }
      if (broken) say(i);
    });
  }
  const outArgs = meta.out_args.map((a) => (a in lowered ? lowered[a] : a in values ? values[a] : NaN));
  return { outArgs, meta, fns, given, lowered, warnings, variant, capacity: values.memory_capacity,
    notes: () => notesOf(w, lowered, named, meta, fx, extended) };
}

// mlsysim_sym.model_notes.model_notes: the named values its inputs() gives (from the page's own state), then each
// note's translated condition and its sentence; a value that is no plain number: no note (Python's except)
function notesOf(w, lowered, named, meta, fx, extended) {
  let values;
  try {
    const int = (x) => P.int(x);
    const [ep, etp, tp, cp] = ["ep_size", "etp_size", "tp_size", "cp_size"].map((k) => int(lowered[k]));
    values = {
      extended: extended ? 1n : 0n, transformer: w.transformer ? 1n : 0n,
      one_byte: fx.precision_key === "fp8" || fx.precision_key === "int8" ? 1n : 0n,
      precision_key: fx.precision_key, workload: w.name,
      ep, etp, tp, cp, ep_etp: P.mul(ep, etp), tp_cp: P.mul(tp, cp),
      z: int(lowered.zero_stage), pp: int(lowered.pp_size), m: int(lowered.microbatch_count),
      apn: int(named.accelerators_per_node),
      experts: w.notes.experts, moe_record: w.notes.moe_record, kv_given: w.notes.kv_given,
      expert_weights: "expert_parameters" in named && truth(named.expert_parameters) ? 1n : 0n,
      kvf: P.float(lowered.kv_fraction),
      // the page sets no record field: none of a card's shape or a record's heads moved away from the record's
      card: w.notes.card, shape_set: "", shape_value: 0n, kv_moved: 0n,
    };
    for (const [m, on] of Object.entries(meta.mechanisms)) values[`on_${m}`] = on;
  } catch (e) {
    if (e instanceof SolveError && CAUGHT.has(e.type)) return [];
    throw e;
  }
  return NOTES.filter((n) => truth(n.when(...n.reads.map((k) => values[k]))))
    .map((n) => n.text.replace(/\{(\w+)\}/g, (_, k) => pyStr(values[k])));
}

// checks._beyond: an integer argument beyond the float range, named
function beyond(args, names) {
  for (const name of names) {
    const v = args[name];
    if (typeof v === "bigint" && (v < 0n ? -v : v) > 10n ** 308n) {
      raise("ValueError", `${name} is beyond the float range, got an integer of ${String(v < 0n ? -v : v).length} digits`);
    }
  }
  raise("ValueError", `one of ${names.join(", ")} is beyond the float range`);
}

// mlsysim_sym.wide.evaluate: the outputs as they are, and where one is not finite (or the float arithmetic
// overflows) again on Wide numbers, back as floats
function evaluate(fn, args) {
  try {
    const out = fn(...args);
    let sum = 0n;
    for (const x of out) sum = P.add(sum, x);
    if (pyEq(P.sub(sum, sum), 0n)) return out;
  } catch (e) {
    if (!(e instanceof SolveError && e.type === "OverflowError")) throw e;
  }
  return fn(...args.map((x) => (typeof x === "bigint" || typeof x === "number" ? toWide(x) : x)))
    .map((x) => (x instanceof Wide ? wideFloat(x) : x));
}

function result({ outArgs, meta, fns, given, warnings, capacity, notes }) {
  const out = evaluate(fns.outputs, outArgs);
  // solver._result: the outputs as floats (an int beyond the float range raises there), dp as an int
  const v = Object.fromEntries(OUTPUT_NAMES.map((n, i) => [n, out[i]]));
  const float = (x) => P.float(x);
  const feasible = truth(v["node_profile.feasible"]);
  const node = {
    latency: float(v["node_profile.latency"]), latency_compute: float(v["node_profile.latency_compute"]),
    latency_memory: float(v["node_profile.latency_memory"]), latency_overhead: float(v["node_profile.latency_overhead"]),
    throughput: float(v["node_profile.throughput"]),
    bottleneck: truth(v["node_profile.memory_bound"]) ? "Memory" : "Compute",
    arithmetic_intensity: float(v["node_profile.arithmetic_intensity"]), energy: float(v["node_profile.energy"]),
    memory_footprint: float(v["node_profile.memory_footprint"]),
    peak_flops_actual: float(v["node_profile.peak_flops_actual"]), peak_bw_actual: float(v["node_profile.peak_bw_actual"]),
    mfu: float(v["node_profile.mfu"]), hfu: float(v["node_profile.hfu"]),
    feasible, offload_spill_bytes: feasible ? null : float(v["node_profile.offload_spill_bytes"]),
    offload_effective_bw: feasible ? null : float(v["node_profile.peak_bw_actual"]),
    overhead_dominated: truth(v["node_profile.overhead_dominated"]),
  };
  const number = (x) => (typeof x === "bigint" ? Number(x) : x);
  const parallelism = { dp: Number(P.int(v.dp)), tp: number(given.tp_size), pp: number(given.pp_size),
    ep: number(given.ep_size) };
  if (meta.extended !== null) {
    parallelism.cp = meta.cp_splits ? number(given.cp_size) : 1;
    parallelism.etp = number(given.etp_size);
  }
  const fl = {};
  for (const n of ["dp_communication_latency", "tp_communication_latency", "ep_communication_latency",
    "communication_latency", "pipeline_bubble_latency", "bubble_fraction", "step_latency_total",
    "scaling_efficiency", "effective_throughput"]) fl[n] = float(v[n]);
  // solver._finite_or_said: a step time beyond a float's range is said, after the checks' warnings
  if (!Number.isFinite(fl.step_latency_total)) warnings.push(INFINITE_STEP);
  const mfu = float(v.mfu);
  // the step's terms (s) in reading order and their sum, the step before the straggler; the extended model's own
  const terms = Object.fromEntries(meta.terms.map(([n, i]) => [n, float(out[i])]));
  terms.T_sync = Object.values(terms).reduce((a, b) => a + b, 0);
  const extended = meta.extended === null ? null : Object.fromEntries(meta.extended.map(([n, i]) => [n, float(out[i])]));
  return {
    node_profile: node, ...fl, parallelism, mfu, warnings, terms, ...(extended ? { extended } : {}),
    memory_capacity: float(capacity),     // the HBM the memory is held against (DistributedResult.memory_capacity)
    notes: notes(),                       // what the numbers do not say (DistributedResult._model_notes)
  };
}
