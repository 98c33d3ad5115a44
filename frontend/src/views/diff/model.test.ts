import { describe, expect, it } from "vitest";
import { diffUrl } from "../../api/routes";
import type { DiffReady } from "../../api/types";
import type { RunsResponse } from "../../api/types";
import diffL1 from "../../__fixtures__/diff/diff_l1.json";
import diffL2 from "../../__fixtures__/diff/diff_l2.json";
import diffRoot from "../../__fixtures__/diff/diff_root.json";
import runsFixture from "../../__fixtures__/diff/runs.json";
import { applicablePick, breadcrumbs, clearDiffHash, drillPath, filterSortKernels, hasPick, mergeDiffHash, parseDiffHash, reasonText, REMAINDER_LABEL, resolveDiffSelection, statusClass, stepRows, waterfall } from "./model";

const runs = (runsFixture as unknown as RunsResponse).runs;
const root = diffRoot as unknown as DiffReady;
const l1 = diffL1 as unknown as DiffReady;
const l2 = diffL2 as unknown as DiffReady;
const nw0 = { run: "nw0", worker: "worker0", span: "1" };
const nw4 = { run: "nw4", worker: "worker0", span: "2" };

describe("diff selections in the hash", () => {
  it("round-trips both sides and the path, keeping the other keys", () => {
    const odd = { run: "runs/a b&c#ñ", worker: "host=1", span: "2" };
    const hash = mergeDiffHash("#run=nw0&worker=worker0&span=1&view=diff", { base: odd, exp: nw4 }, ["ProfilerStep", "a,b [x]"], nw0);
    expect(hash.startsWith("#run=nw0&worker=worker0&span=1&view=diff&base_run=")).toBe(true);
    const back = parseDiffHash(hash);
    expect(back).toEqual({ base: odd, exp: nw4, path: ["ProfilerStep", "a,b [x]"], for: nw0 });
    // the main selection is untouched
    const p = new URLSearchParams(hash.slice(1));
    expect([p.get("run"), p.get("view")]).toEqual(["nw0", "diff"]);
  });

  it("drops the path key at the top level and ignores a malformed path", () => {
    const hash = mergeDiffHash("#diff_path=%5B%22x%22%5D", { base: nw0, exp: nw4 }, [], nw0);
    expect(hash).not.toContain("diff_path");
    expect(parseDiffHash("#diff_path=%7Bnot-json").path).toEqual([]);
    expect(parseDiffHash("#diff_path=%5B1%2C2%5D").path).toEqual([]);
    expect(parseDiffHash("")).toEqual({ base: {}, exp: {}, path: [] });
  });

  it("defaults to the current selection against the same worker/span of another run", () => {
    const sel = resolveDiffSelection(runs, { base: {}, exp: {}, path: [] }, nw0);
    expect(sel).toEqual({ base: nw0, exp: { run: "nw4", worker: "worker0", span: "1" } });
    // with a single run, the experiment is the next span of the same worker
    const one = runs.filter((r) => r.name === "nw0");
    expect(resolveDiffSelection(one, { base: {}, exp: {}, path: [] }, nw0)?.exp).toEqual({ ...nw0, span: "2" });
  });

  it("applies a pick only under the main selection it was made for; else the baseline is the main selection", () => {
    // the trial: Diff used on nw0 wrote its sides; later, on another run, Diff still compared nw0's pair
    const pickedOnNw0 = parseDiffHash(
      mergeDiffHash("#run=nw0&worker=worker0&span=1", { base: { ...nw4, span: "1" }, exp: nw0 }, [], nw0),
    );
    expect(pickedOnNw0.for).toEqual(nw0);
    expect(applicablePick(runs, pickedOnNw0, nw0)).toBe(pickedOnNw0);
    const composer = { run: "composer", worker: "rank0", span: "1" };
    const other = applicablePick(runs, pickedOnNw0, composer);
    expect(hasPick(other)).toBe(false);
    expect(resolveDiffSelection(runs, other, composer)?.base).toEqual(composer);
    // a link without diff_for belongs to the main selection in the same hash
    const link = parseDiffHash("#run=nw4&worker=worker0&span=2&base_run=nw0&base_worker=worker0&base_span=1");
    expect(link.for).toEqual(nw4);
    expect(applicablePick(runs, link, nw4)).toBe(link);
    expect(hasPick(applicablePick(runs, link, nw0))).toBe(false);
    // a hash with no pick has no `for`
    expect(parseDiffHash("#run=nw0&worker=worker0&span=1").for).toBeUndefined();
    // clearing removes every diff key and keeps the others
    expect(clearDiffHash("#run=nw0&view=diff&base_run=nw4&exp_span=1&diff_path=%5B%5D&diff_for=x")).toBe("#run=nw0&view=diff");
  });

  it("resolves what the hash names, falling back when it does not exist", () => {
    const sel = resolveDiffSelection(runs, { base: { run: "composer" }, exp: { ...nw4, span: "9" }, path: [] }, nw0);
    expect(sel).toEqual({ base: { run: "composer", worker: "rank0", span: "1" }, exp: { ...nw4, span: "1" } });
  });

  it("builds the route URL with the path as a JSON list", () => {
    expect(diffUrl({ base: nw0, exp: nw4 })).toBe(
      "diff?base_run=nw0&base_worker=worker0&base_span=1&exp_run=nw4&exp_worker=worker0&exp_span=2",
    );
    const url = diffUrl({ base: nw0, exp: nw4 }, ["ProfilerStep", "enumerate(DataLoader)"]);
    expect(new URLSearchParams(url.split("?")[1]).get("path")).toBe('["ProfilerStep","enumerate(DataLoader)"]');
  });
});

describe("breadcrumb navigation", () => {
  it("goes two levels down with the rows' paths and back with the crumbs", () => {
    const step = root.operators.find((o) => o.name === "ProfilerStep")!;
    expect(step.has_children).toBe(true);
    const p1 = drillPath(step, []);
    expect(p1).toEqual(l1.path);
    const dl = l1.operators.find((o) => o.name === "enumerate(DataLoader)")!;
    const p2 = drillPath(dl, p1);
    expect(p2).toEqual(["ProfilerStep", "enumerate(DataLoader)"]);
    expect(p2).toEqual(l2.path);
    const crumbs = breadcrumbs(p2);
    expect(crumbs.map((c) => c.label)).toEqual(["All operators", "ProfilerStep", "enumerate(DataLoader)"]);
    expect(crumbs.map((c) => c.path)).toEqual([[], ["ProfilerStep"], ["ProfilerStep", "enumerate(DataLoader)"]]);
    // a row without a path (old server) appends its name
    expect(drillPath({ name: "x", path: [] }, ["a"])).toEqual(["a", "x"]);
  });
});

describe("waterfall", () => {
  it("chains each row from the previous running total to its own", () => {
    const { bars, total } = waterfall(l1.operators);
    expect(bars).toHaveLength(l1.operators.length);
    expect(bars[0]!.start).toBe(0);
    for (let i = 1; i < bars.length; i++) expect(bars[i]!.start).toBe(bars[i - 1]!.end);
    for (const [i, b] of bars.entries()) {
      expect(b.end).toBe(l1.operators[i]!.cumulative_delta_us);
      expect(b.delta).toBeCloseTo(b.end - b.start, 9);
    }
    expect(total).toBe(l1.operators.at(-1)!.cumulative_delta_us);
    // enumerate(DataLoader) has no device time: its host total delta opens the level
    const dl = l1.operators[0]!;
    expect(dl.name).toBe("enumerate(DataLoader)");
    expect(bars[0]!.delta).toBeCloseTo(dl.delta.host_total_us, 6);
    expect(bars[0]!.delta).toBeLessThan(-60_000);
    // the sum of the deltas is the total
    expect(bars.reduce((s, b) => s + b.delta, 0)).toBeCloseTo(total, 6);
  });

  it("is empty for an empty level", () => {
    expect(waterfall([])).toEqual({ bars: [], total: 0 });
  });

  it("with the server's totals, ends with the remainder bar at the step-total delta", () => {
    // rows +1000, +50, +20, +8 µs (tests/unit/analysis/test_diff.py's synthesized pair): the steps grew by 1000 µs
    const ops = [
      { name: "A", cumulative_delta_us: 1000 },
      { name: "C", cumulative_delta_us: 1050 },
      { name: "D", cumulative_delta_us: 1070 },
      { name: "B", cumulative_delta_us: 1078 },
    ];
    const { bars, total } = waterfall(ops, { rows_us: 1078, remainder_us: -78, total_us: 1000 });
    expect(total).toBe(1000);
    expect(bars.map((b) => b.name)).toEqual(["A", "C", "D", "B", REMAINDER_LABEL]);
    expect(bars.at(-1)).toEqual({ name: REMAINDER_LABEL, start: 1078, end: 1000, delta: -78, remainder: true });
    expect(bars.reduce((s, b) => s + b.delta, 0)).toBe(1000);
    expect(waterfall([], { rows_us: 0, remainder_us: 5, total_us: 5 }).bars).toHaveLength(1);
  });
});

describe("reasonText", () => {
  const t = { change_pct: 5, change_us: 10 };
  it("words the server's reason with its thresholds, and nothing for an older server", () => {
    expect(reasonText("within_us", t)).toBe("unchanged: the host total per step changed by at most 10 \u00b5s");
    expect(reasonText("within_pct", t)).toBe("unchanged: the host total per step changed by at most 5 % of the baseline");
    expect(reasonText("one_side", t)).toBe("present on one side only");
    expect(reasonText(undefined, t)).toBeUndefined();
    expect(reasonText("changed", undefined)).toBeUndefined();
  });
});

describe("status badges", () => {
  it("maps each status to its class", () => {
    const statuses = ["faster", "slower", "added", "removed", "unchanged", "something-new"];
    expect(statuses.map(statusClass)).toEqual([
      "diff-badge diff-badge-faster",
      "diff-badge diff-badge-slower",
      "diff-badge diff-badge-added",
      "diff-badge diff-badge-removed",
      "diff-badge diff-badge-unchanged",
      "diff-badge diff-badge-unchanged", // an unknown status reads as unchanged
    ]);
  });

  it("the fixture levels carry every operator status", () => {
    const seen = new Set([...l1.operators, ...l2.operators].map((o) => o.status));
    expect([...seen].sort()).toEqual(["added", "faster", "removed", "slower", "unchanged"]);
  });
});

describe("step comparison rows", () => {
  it("lists the categories with the total last and the server's deltas", () => {
    const rows = stepRows(root.steps, root.category_labels);
    expect(rows.at(-1)!.key).toBe("total_us");
    const dl = rows.find((r) => r.key === "dataloader_us")!;
    expect(dl.label).toBe("DataLoader");
    expect(dl.delta).toBe(root.steps.delta.dataloader_us);
    expect(dl.delta).toBeCloseTo(dl.experiment - dl.baseline, 6);
    expect(dl.relativePct).toBeCloseTo(-98.0, 1);
    expect(rows.find((r) => r.key === "communication_us")!.relativePct).toBeNull();
  });
});

describe("kernel diff", () => {
  it("searches and sorts client-side", () => {
    const all = filterSortKernels(root.kernels, "", "abs_delta", "desc");
    expect(all).toHaveLength(root.kernels.length);
    for (let i = 1; i < all.length; i++) {
      expect(Math.abs(all[i - 1]!.delta_per_step_us)).toBeGreaterThanOrEqual(Math.abs(all[i]!.delta_per_step_us));
    }
    const sgemm = filterSortKernels(root.kernels, "SGEMM", "baseline_per_step_us", "asc");
    expect(sgemm.length).toBeGreaterThan(0);
    expect(sgemm.every((k) => k.name.toLowerCase().includes("sgemm"))).toBe(true);
    for (let i = 1; i < sgemm.length; i++) {
      expect(sgemm[i - 1]!.baseline_per_step_us).toBeLessThanOrEqual(sgemm[i]!.baseline_per_step_us);
    }
    const byName = filterSortKernels(root.kernels, "", "name", "asc").map((k) => k.name);
    expect(byName).toEqual([...byName].sort((a, b) => a.localeCompare(b)));
  });
});
