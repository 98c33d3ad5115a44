// With no selection asked for, the app opens on the first run that has traces; runs of
// memory files only come after the trace runs in the Run picker, marked as such.
import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { RunInfo } from "../api/types";
import runsFixture from "../__fixtures__/runs.json";
import { runOptions, Selectors } from "../components/Selectors";
import { resolveSelection } from "./selection";

const memoryOnly: RunInfo = {
  name: "fts_memprofiler",
  workers: [],
  artifacts: [{ path: "fts_memprofiler/memprofiler/rank_0_memory_stats.yaml", kind: "memprofiler_stats", size_bytes: 2048, state: "ready", error: null }],
};
// the server lists runs by name: "fts_memprofiler" sorts before the trace runs (as in samples/)
const runs = [memoryOnly, ...(runsFixture.runs as RunInfo[])];

describe("first screen", () => {
  it("opens on the first run with traces, not on a run of memory files only", () => {
    expect(resolveSelection(runs, {})).toEqual({ run: "resnet50_num_workers_0", worker: "worker0", span: "1" });
    expect(resolveSelection(runs, { run: "gone" })?.run).toBe("resnet50_num_workers_0");
  });

  it("still opens a memory-only run when asked for, or when it is all there is", () => {
    expect(resolveSelection(runs, { run: "fts_memprofiler" })).toEqual({ run: "fts_memprofiler", worker: "", span: "" });
    expect(resolveSelection([memoryOnly], {})).toEqual({ run: "fts_memprofiler", worker: "", span: "" });
  });

  it("lists memory-only runs last in the Run picker, marked", () => {
    const options = runOptions(runs);
    expect(options.map((o) => o.value)).toEqual([...runsFixture.runs.map((r) => r.name), "fts_memprofiler"]);
    expect(options.at(-1)?.label).toBe("fts_memprofiler (memory files only)");
    render(<Selectors runs={runs} selection={{ run: "resnet50_num_workers_0", worker: "worker0", span: "1" }} onSelect={() => {}} />);
    const select = screen.getByTestId("run-select") as HTMLSelectElement;
    expect(Array.from(select.options).at(-1)?.textContent).toBe("fts_memprofiler (memory files only)");
    expect(Array.from(select.options)[0]?.value).toBe("resnet50_num_workers_0");
  });
});
