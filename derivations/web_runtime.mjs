// ---- the hand-written part (derivations/web_runtime.mjs): arguments, checks, messages, the result ----
// No arithmetic of the model is here: outputs_* and rules_* above are printed from its expressions.

function pymax(...a) { let m = a[0]; for (let i = 1; i < a.length; i++) if (a[i] > m) m = a[i]; return m; }
function pymin(...a) { let m = a[0]; for (let i = 1; i < a.length; i++) if (a[i] < m) m = a[i]; return m; }
function pymod(a, b) { const r = a % b; return (r !== 0 && (r < 0) !== (b < 0)) ? r + b : r; }
// Python's truth value (mlsysim tests its switches with `if x`): NaN is true, 0, false, null and "" are not
function truthy(x) { return !(x === 0 || x === false || x === null || x === undefined || x === ""); }
const own = (o, k) => typeof k === "string" && Object.prototype.hasOwnProperty.call(o, k);
// Python's repr() of an argument in a message: True/False, 'text', whole numbers of counts as ints
function pyRepr(v, integer) {
  if (typeof v === "string") return `'${v}'`;
  return pyStr(v, integer);
}

/** The bundled catalog: workload and cluster names, with their display names. */
export const catalog = {
  workloads: Object.fromEntries(Object.entries(DATA.workloads).map(([k, w]) => [k, w.name])),
  fleets: Object.fromEntries(Object.entries(DATA.fleets).map(([k, f]) => [k, f.name])),
};

/** solve()'s keyword arguments and their defaults (mlsysim 0.3.0's; the extended model's neutral), precision
 * included: the parameter table's keywords, in solve()'s order. */
export const defaults = Object.fromEntries([["precision", "fp16"],
  ...Object.entries(KEYWORDS).map(([k, p]) => [k, p.default])]);

/** An error of solve(): `type` is Python's exception class name (ValueError, TypeError, ...). */
export class SolveError extends Error {
  constructor(type, message) { super(message); this.type = type; this.name = type; }
}

// Python's str() of a float: repr, the shortest round-trip digits, "1.0" for whole numbers, "1e-05" exponents
function pyFloat(x) {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (Object.is(x, -0)) return "-0.0";
  const a = Math.abs(x);
  if (a !== 0 && (a >= 1e16 || a < 1e-4)) {
    let [m, e] = x.toExponential().split("e");
    const n = parseInt(e, 10);
    return `${m}e${n < 0 ? "-" : "+"}${String(Math.abs(n)).padStart(2, "0")}`;
  }
  const s = String(x);
  return Number.isInteger(x) ? s + ".0" : s;
}

// a value as Python's str.format shows it: whole numbers of counts and flags as ints, other numbers as floats
function pyStr(v, integer) {
  if (typeof v === "string") return v;
  if (typeof v === "boolean") return v ? "True" : "False";
  if (v === null || v === undefined) return "None";
  if (integer && Number.isInteger(v)) return String(v);
  return pyFloat(v);
}

function format(message, values, ints) {
  return message.replace(/\{(\w+)\}/g, (_, k) => pyStr(values[k], ints.has(k)));
}

const COUNT_KINDS = new Set(["count", "flag"]);

/**
 * Price one training step: mlsysim_sym's DistributedModel().solve(model, fleet, **kwargs).
 * `model` and `fleet` are catalog names; `kwargs` uses solve()'s keyword names. Throws a SolveError with
 * solve()'s message for the first broken check; returns the result (SI units) with `warnings`.
 */
export function solve(model, fleet, kwargs = {}) {
  const { named, meta, fns, args, warnings } = prepare(model, fleet, kwargs);
  const out = fns.outputs(...meta.out_args.map((a) => named[a]));
  return result(out, args, warnings, meta);
}

/**
 * The elasticities of the fleet MFU at a configuration (d ln MFU / d ln x, in the regime of the point), for
 * every continuous parameter, largest first: [{argument, label, symbol, elasticity}].
 */
export function sensitivities(model, fleet, kwargs = {}) {
  const { named, meta, fns } = prepare(model, fleet, kwargs);
  const e = fns.elasticities(...meta.out_args.map((a) => named[a]));
  return meta.elasticities.map((name, i) => ({ argument: name, label: LABELS[name].label,
    symbol: LABELS[name].symbol, elasticity: e[i] }))
    .filter((r) => Number.isFinite(r.elasticity))
    .sort((a, b) => Math.abs(b.elasticity) - Math.abs(a.elasticity));
}

/** The equations of the step in the book's notation, for the model's variant: [[quantity, LaTeX], ...]. */
export function equations(model, fleet, kwargs = {}) {
  return META[prepare(model, fleet, kwargs, false).variant].equations;
}

/** Symbols and words of solve()'s arguments: {argument: {label, symbol, latex, unit}}. */
export const labels = LABELS;

function prepare(model, fleet, kwargs, checked = true) {
  const w = own(DATA.workloads, model) ? DATA.workloads[model] : undefined;
  if (w === undefined) throw new SolveError("KeyError", `unknown workload '${model}'; see catalog.workloads`);
  const f = own(DATA.fleets, fleet) ? DATA.fleets[fleet] : undefined;
  if (f === undefined) throw new SolveError("KeyError", `unknown fleet '${fleet}'; see catalog.fleets`);
  kwargs = { ...(kwargs || {}) };
  for (const k of Object.keys(kwargs)) if (kwargs[k] === undefined) delete kwargs[k];    // not given: the default
  // which model: kwargs.fidelity, as DistributedModel(fidelity=...) (mlsysim's, or the extended one)
  const fidelity = own(kwargs, "fidelity") ? kwargs.fidelity : "mlsysim";
  delete kwargs.fidelity;
  if (fidelity !== "mlsysim" && fidelity !== "extended") {
    throw new SolveError("ValueError", `fidelity must be one of 'mlsysim', 'extended', got ${pyRepr(fidelity)}`);
  }
  const extended = fidelity === "extended";
  for (const k of Object.keys(kwargs)) {
    if (!own(defaults, k) && k !== "topology_override") {
      throw new SolveError("TypeError", `solve() got an unexpected keyword argument '${k}'; allowed: ` +
        [...Object.keys(KEYWORDS).slice(0, 1), "precision", ...Object.keys(KEYWORDS).slice(1)].join(", "));
    }
  }
  // mlsysim's model takes the extended model's keywords at their neutral values only
  for (const [k, p] of Object.entries(KEYWORDS)) {
    if (p.fidelity !== "extended" || !own(kwargs, k) || extended) continue;
    const v = kwargs[k];
    const neutral = typeof p.default === "boolean" ? truthy(v) === p.default
      : (typeof v === "number" && v === p.default);
    if (!neutral) {
      throw new SolveError("ValueError", `${k}=${pyRepr(v, p.kind === "count")} is an argument of the extended ` +
        `model (mlsysim 0.3.0 has no ${p.label}); pass fidelity='extended'`);
    }
  }
  const args = { ...defaults, ...kwargs };
  for (const [k, v] of Object.entries(args)) {
    if (k === "precision" || k === "topology_override") continue;
    if (typeof v !== "number" && typeof v !== "boolean") {
      throw new SolveError("TypeError", `${k} must be a real number, got ${v === null ? "NoneType" : typeof v}`);
    }
  }
  // mlsysim's reading of the keywords: flags as 0/1, seq_len unread off transformers without TP or EP
  const lowered = { ...args };
  for (const k of FLAG_KEYWORDS) lowered[k] = truthy(lowered[k]) ? 1 : 0;
  for (const [k, v] of Object.entries(lowered)) if (typeof v === "boolean") lowered[k] = v ? 1 : 0;
  if (!w.transformer && lowered.tp_size === 1 && lowered.ep_size === 1) lowered.seq_len = 0;
  // the precision's facts
  const precision = args.precision;
  const notString = typeof precision !== "string";
  const key = notString ? null : precision.toLowerCase();
  const unsupported = !notString && !own(PRECISION_BYTES, key);
  const k2 = (!notString && !unsupported) ? key : "fp16";
  const fallback = !notString && !unsupported && !w.transformer && f.by_precision[k2].fallback;
  const wp = w.by_precision[k2];
  const variant = wp.variant + (extended ? "_extended" : "");
  const named = { ...DATA.constants, ...f.fields, peak_flops: f.by_precision[k2].peak_flops };
  for (const [k, v] of Object.entries(wp)) if (k !== "variant") named[k] = v;
  for (const [k, v] of Object.entries(named)) if (v === null) named[k] = NaN;
  Object.assign(named, lowered);
  const facts = [notString, unsupported, fallback];
  FACT_NAMES.forEach((n, i) => { named[n] = facts[i] ? 1 : 0; });
  const messageValues = {
    ...lowered, ...args, precision: notString ? precision : precision, precision_type: notString ?
      (precision === null ? "NoneType" : typeof precision) : "str",
    precision_key: (notString || unsupported) ? null : key, accelerator: f.accelerator, available: f.available,
  };
  // the checks, in mlsysim's order: warnings before the first broken error, then that error
  const meta = META[variant];
  const fns = VARIANT_FUNCTIONS[variant];
  const [broken, ...warned] = fns.rules(...meta.args.map((a) => (a in named ? named[a] : NaN)));
  if (!checked) return { variant };
  const said = meta.warnings.filter((i, j) => warned[j] && (broken === -1 || i < broken));
  if (broken !== -1) said.push(broken);
  const warnings = [];
  for (const i of said) {
    const r = meta.rules[i];
    const values = { ...messageValues };
    const ints = new Set(Object.entries(KEYWORDS).filter(([, p]) => COUNT_KINDS.has(p.kind)).map(([k]) => k));
    if (r.fn) {
      const got = FIELD_FUNCTIONS[r.fn](...r.field_args.map((a) => (a in named ? named[a] : NaN)));
      r.fields.forEach((label, j) => { values[label] = got[j]; if (r.ints[j]) ints.add(label); });
    }
    const text = format(r.message, values, ints);
    if (r.warning) warnings.push(text);
    else throw new SolveError(r.error, text);
  }
  return { named, meta, fns, args, warnings, variant };
}

function result(out, args, warnings, meta) {
  // the outputs, under mlsysim's field names (SI units), the step's terms (model quantities) and, in the
  // extended model, its own terms (DistributedResult.extended)
  const v = Object.fromEntries(OUTPUT_NAMES.map((n, i) => [n, out[i]]));
  const terms = Object.fromEntries(meta.terms.map((n, i) => [n, out[OUTPUT_NAMES.length + i]]));
  const at = OUTPUT_NAMES.length + meta.terms.length;
  const extended = meta.extended.length ? Object.fromEntries(meta.extended.map((n, i) => [n, out[at + i]])) : null;
  const feasible = Boolean(v["node_profile.feasible"]);
  const node = {
    latency: v["node_profile.latency"], latency_compute: v["node_profile.latency_compute"],
    latency_memory: v["node_profile.latency_memory"], latency_overhead: v["node_profile.latency_overhead"],
    throughput: v["node_profile.throughput"], bottleneck: v["node_profile.memory_bound"] ? "Memory" : "Compute",
    arithmetic_intensity: v["node_profile.arithmetic_intensity"], energy: v["node_profile.energy"],
    memory_footprint: v["node_profile.memory_footprint"], peak_flops_actual: v["node_profile.peak_flops_actual"],
    peak_bw_actual: v["node_profile.peak_bw_actual"], mfu: v["node_profile.mfu"], hfu: v["node_profile.hfu"],
    feasible, offload_spill_bytes: feasible ? null : v["node_profile.offload_spill_bytes"],
    offload_effective_bw: feasible ? null : v["node_profile.peak_bw_actual"],
    overhead_dominated: Boolean(v["node_profile.overhead_dominated"]),
  };
  return {
    node_profile: node,
    dp_communication_latency: v.dp_communication_latency, tp_communication_latency: v.tp_communication_latency,
    ep_communication_latency: v.ep_communication_latency, communication_latency: v.communication_latency,
    pipeline_bubble_latency: v.pipeline_bubble_latency, bubble_fraction: v.bubble_fraction,
    step_latency_total: v.step_latency_total, scaling_efficiency: v.scaling_efficiency,
    effective_throughput: v.effective_throughput,
    parallelism: { dp: v.dp, tp: args.tp_size, pp: args.pp_size, ep: args.ep_size,
      ...(extended ? { cp: args.cp_size } : {}) },
    mfu: v.mfu, warnings, terms, ...(extended ? { extended } : {}),
  };
}
