import { describe, expect, it } from "vitest";
import runsFixture from "../../__fixtures__/memory/runs.json";
import type { RunInfo } from "../../api/types";
import { parseView } from "../../hooks/useView";
import { resolveSelection } from "../../state/selection";

const runs = (runsFixture as { runs: RunInfo[] }).runs;

describe("runs with memory artifacts (real runs response)", () => {
  it("lists artifacts, and a run with artifacts but no workers is selected by run alone", () => {
    const snap = runs.find((r) => r.name === "snap")!;
    expect(snap.workers).toEqual([]);
    expect(snap.artifacts!.map((a) => a.kind)).toEqual(["snapshot", "snapshot"]);
    expect(resolveSelection(runs, { run: "snap" })).toEqual({ run: "snap", worker: "", span: "" });
    expect(resolveSelection(runs, { run: "bert" })).toEqual({ run: "bert", worker: "w", span: "1" });
    // a run with neither stays unselectable
    expect(resolveSelection([{ name: "empty", workers: [], artifacts: [] }], {})).toBeNull();
  });

  it("memory and snapshots are views kept in the hash", () => {
    expect(parseView("memory")).toBe("memory");
    expect(parseView("snapshots")).toBe("snapshots");
  });
});
