// Pure logic of the Diff view: the two selections in the hash, defaults, breadcrumbs, the waterfall,
// status badges and the step-comparison rows. No React here, so all of it is unit tested.
import type { DiffSelection } from "../../api/routes";
import type { DiffKernel, DiffOperator, DiffReason, DiffSteps, DiffThresholds, DiffWaterfall, OpStatus } from "../../api/types";
import type { RunInfo, Selection } from "../../api/types";
import { parseHash } from "../../state/hashState";
import { resolveSelection, sameSelection } from "../../state/selection";
import { categoryLabel } from "../../util/categories";
import { formatNumber } from "../../util/format";

type Side = "base" | "exp";
const SIDES: Side[] = ["base", "exp"];
const FIELDS = ["run", "worker", "span"] as const;
/** Hash key of the drill-down path (a JSON list of operator names). */
export const PATH_KEY = "diff_path";
/** Hash key of the main selection a Diff pick was made under (a JSON list [run, worker, span]). */
export const FOR_KEY = "diff_for";

/**
 * What the hash says about the Diff view. The rule: the baseline follows the main selection (and the
 * experiment is picked from it) unless the user picked sides in the Diff view; a pick is stored with
 * the main selection it was made under (`for`) and applies only while the main selection is that one.
 */
export interface DiffHash {
  base: Partial<Selection>;
  exp: Partial<Selection>;
  path: string[];
  /**
   * The main selection the pick belongs to: `diff_for` when the hash has it, else (a link written by
   * hand or by an older version) the main selection named in the same hash.
   */
  for?: Partial<Selection>;
}

function params(hash: string): URLSearchParams {
  return new URLSearchParams(hash.startsWith("#") ? hash.slice(1) : hash);
}

/** Reads `base_run`…`exp_span` and `diff_path` from a hash; absent keys stay absent. */
export function parseDiffHash(hash: string): DiffHash {
  const p = params(hash);
  const out: DiffHash = { base: {}, exp: {}, path: [] };
  for (const side of SIDES) {
    for (const f of FIELDS) {
      const v = p.get(`${side}_${f}`);
      if (v !== null) out[side][f] = v;
    }
  }
  out.path = parsePath(p.get(PATH_KEY));
  if (hasPick(out) || out.path.length > 0) out.for = parseFor(p.get(FOR_KEY)) ?? parseHash(hash);
  return out;
}

function parseFor(text: string | null): Selection | null {
  if (!text) return null;
  try {
    const v: unknown = JSON.parse(text);
    if (Array.isArray(v) && v.length === 3 && v.every((x) => typeof x === "string")) {
      const [run, worker, span] = v as [string, string, string];
      return { run, worker, span };
    }
  } catch {
    // not JSON: fall back to the hash's own selection
  }
  return null;
}

/** True when the hash names either side (a pick made in the Diff view or a link). */
export function hasPick(h: Pick<DiffHash, "base" | "exp">): boolean {
  return Object.keys(h.base).length > 0 || Object.keys(h.exp).length > 0;
}

const NO_PICK: DiffHash = { base: {}, exp: {}, path: [] };

/**
 * The pick the Diff view follows: the hash's when it was made under the current main selection (its
 * `for` resolves to `current`), else none, so that the baseline is the main selection again.
 */
export function applicablePick(runs: RunInfo[], wanted: DiffHash, current: Selection): DiffHash {
  if (!hasPick(wanted) && wanted.path.length === 0) return NO_PICK;
  const madeFor = resolveSelection(runs, wanted.for ?? {});
  return sameSelection(madeFor, current) ? wanted : NO_PICK;
}

export function parsePath(text: string | null): string[] {
  if (!text) return [];
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) && v.every((x) => typeof x === "string") ? (v as string[]) : [];
  } catch {
    return [];
  }
}

/**
 * The hash with the diff keys set (or, for an empty path, removed) and `diff_for` = the main selection
 * the pick is made under; every other key is kept in place.
 */
export function mergeDiffHash(currentHash: string, sel: DiffSelection, path: readonly string[], madeFor: Selection): string {
  const p = params(currentHash);
  for (const side of SIDES) for (const f of FIELDS) p.set(`${side}_${f}`, sel[side][f]);
  if (path.length > 0) p.set(PATH_KEY, JSON.stringify(path));
  else p.delete(PATH_KEY);
  p.set(FOR_KEY, JSON.stringify([madeFor.run, madeFor.worker, madeFor.span]));
  const text = p.toString();
  return text === "" ? "" : `#${text}`;
}

/** The hash without any diff key (the Diff view follows the main selection again). */
export function clearDiffHash(currentHash: string): string {
  const p = params(currentHash);
  for (const side of SIDES) for (const f of FIELDS) p.delete(`${side}_${f}`);
  p.delete(PATH_KEY);
  p.delete(FOR_KEY);
  const text = p.toString();
  return text === "" ? "" : `#${text}`;
}

/** A run other than `current` that has a trace, preferring one with the same worker name. */
function otherRun(runs: RunInfo[], current: Selection): RunInfo | undefined {
  const others = runs.filter((r) => r.name !== current.run && r.workers.some((w) => w.spans.length > 0));
  return others.find((r) => r.workers.some((w) => w.worker === current.worker)) ?? others[0];
}

/**
 * What the pickers show: what the hash asks for, resolved against the registry. Defaults: baseline =
 * the current selection, experiment = the same worker/span of another run when there is one, else the
 * baseline's next span, else the baseline itself.
 */
export function resolveDiffSelection(runs: RunInfo[], wanted: DiffHash, current: Selection): DiffSelection | null {
  const base = resolveSelection(runs, Object.keys(wanted.base).length > 0 ? wanted.base : current);
  if (!base || base.worker === "") return null;
  let expWanted: Partial<Selection> = wanted.exp;
  if (Object.keys(expWanted).length === 0) {
    const other = otherRun(runs, base);
    if (other) expWanted = { run: other.name, worker: base.worker, span: base.span };
    else {
      const spans = runs.find((r) => r.name === base.run)?.workers.find((w) => w.worker === base.worker)?.spans ?? [];
      const next = spans.find((s) => s.span !== base.span);
      expWanted = { ...base, span: next?.span ?? base.span };
    }
  }
  const exp = resolveSelection(runs, expWanted);
  if (!exp || exp.worker === "") return null;
  return { base, exp };
}

export interface Crumb {
  label: string;
  /** The path this crumb goes back to. */
  path: string[];
}

/** "All operators" then one crumb per path element; each crumb's path is the prefix up to it. */
export function breadcrumbs(path: readonly string[]): Crumb[] {
  return [{ label: "All operators", path: [] }, ...path.map((name, i) => ({ label: name, path: path.slice(0, i + 1) }))];
}

/** The path one level below a row (the server sends each row's full path). */
export function drillPath(row: Pick<DiffOperator, "path" | "name">, current: readonly string[]): string[] {
  return row.path.length > 0 ? [...row.path] : [...current, row.name];
}

export interface WaterfallBar {
  name: string;
  /** Where the bar starts (the running total before this row) and ends (after it), µs. */
  start: number;
  end: number;
  delta: number;
  /** The remainder bar (step-total Δ not in any row of the level). */
  remainder?: boolean;
}

/** The remainder bar's label: the step-total Δ that no row of this level holds. */
export const REMAINDER_LABEL = "Not in these operators";

/**
 * Waterfall of one level from the server's running total `cumulative_delta_us`: each bar goes from the
 * previous running total to this row's. With the server's `waterfall` totals, a remainder bar follows
 * (the step-total Δ not in the rows) and the total is the step-total Δ; an older server's total is the
 * final running total.
 */
export function waterfall(
  ops: readonly Pick<DiffOperator, "name" | "cumulative_delta_us">[],
  totals?: DiffWaterfall,
): { bars: WaterfallBar[]; total: number } {
  let prev = 0;
  const bars: WaterfallBar[] = ops.map((op) => {
    const bar = { name: op.name, start: prev, end: op.cumulative_delta_us, delta: op.cumulative_delta_us - prev };
    prev = op.cumulative_delta_us;
    return bar;
  });
  if (!totals) return { bars, total: prev };
  bars.push({ name: REMAINDER_LABEL, start: prev, end: totals.total_us, delta: totals.remainder_us, remainder: true });
  return { bars, total: totals.total_us };
}

export const STATUS_LABEL: Record<OpStatus, string> = {
  added: "added",
  removed: "removed",
  faster: "faster",
  slower: "slower",
  unchanged: "unchanged",
};

/**
 * The verdict rule in words, from the thresholds the server applied (`diff` answers them; an older
 * server that does not is described without numbers).
 */
export function thresholdText(t: DiffThresholds | undefined): string {
  const rule = t
    ? `by more than ${formatNumber(t.change_us)} \u00b5s and more than ${formatNumber(t.change_pct)} % of the baseline`
    : "by more than the server's thresholds";
  return (
    `An operator is faster or slower when its host total per step (calls inside the steps) changes ${rule}; ` +
    "otherwise it is unchanged. Added / removed: present on one side only. Moved: its parent changed (matched " +
    "by name), compared with its baseline place. The waterfall adds up the same " +
    "host totals; its remainder bar is the step-total \u0394 not in these operators, so it ends at the step-total \u0394."
  );
}

/** Why a row has its verdict, in words, from the server's `reason` (nothing for an older server). */
export function reasonText(reason: DiffReason | undefined, t: DiffThresholds | undefined): string | undefined {
  if (!reason || !t) return undefined;
  switch (reason) {
    case "within_us":
      return `unchanged: the host total per step changed by at most ${formatNumber(t.change_us)} \u00b5s`;
    case "within_pct":
      return `unchanged: the host total per step changed by at most ${formatNumber(t.change_pct)} % of the baseline`;
    case "changed":
      return `changed by more than ${formatNumber(t.change_us)} \u00b5s and ${formatNumber(t.change_pct)} % (host total per step)`;
    case "one_side":
      return "present on one side only";
  }
  return undefined;
}

/** CSS classes of a status badge; an unknown status gets the neutral look. */
export function statusClass(status: string): string {
  const known = ["added", "removed", "faster", "slower", "unchanged", "present"].includes(status);
  return `diff-badge diff-badge-${known ? status : "unchanged"}`;
}

export interface StepRow {
  key: string;
  label: string;
  baseline: number;
  experiment: number;
  delta: number;
  relativePct: number | null;
}

/** Category rows (server order, total last) of the step comparison. */
export function stepRows(steps: DiffSteps, labels?: Record<string, string>): StepRow[] {
  const keys = Object.keys(steps.baseline).filter((k) => k !== "total_us");
  keys.push("total_us");
  return keys.map((key) => ({
    key,
    label: key === "total_us" ? "Total (step)" : categoryLabel(key, labels),
    baseline: steps.baseline[key] ?? 0,
    experiment: steps.experiment[key] ?? 0,
    delta: steps.delta[key] ?? (steps.experiment[key] ?? 0) - (steps.baseline[key] ?? 0),
    relativePct: steps.relative_pct[key] ?? null,
  }));
}

export type KernelSortKey = "abs_delta" | "name" | "baseline_calls" | "experiment_calls" | "baseline_per_step_us" | "experiment_per_step_us" | "delta_per_step_us";

/** Client-side filter (case-insensitive substring) and sort of the kernel diff (≤ 500 rows). */
export function filterSortKernels(
  kernels: readonly DiffKernel[],
  search: string,
  sort: KernelSortKey,
  order: "asc" | "desc",
): DiffKernel[] {
  const q = search.trim().toLowerCase();
  const rows = q ? kernels.filter((k) => k.name.toLowerCase().includes(q)) : [...kernels];
  const sign = order === "asc" ? 1 : -1;
  rows.sort((a, b) => {
    if (sort === "name") return sign * a.name.localeCompare(b.name);
    const d =
      sort === "abs_delta"
        ? Math.abs(a.delta_per_step_us) - Math.abs(b.delta_per_step_us)
        : a[sort] - b[sort];
    return sign * d || a.name.localeCompare(b.name);
  });
  return rows;
}

/** Signed duration text: "+1.24 ms", "−58.08 ms". */
export function signed(text: string, value: number): string {
  if (value > 0) return `+${text}`;
  if (value < 0) return `\u2212${text.replace(/^-/, "")}`;
  return text;
}
