import { fireEvent, render, screen } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import type { RunInfo } from "../api/types";
import runsFixture from "../__fixtures__/runs.json";
import { Selectors } from "./Selectors";

const memoryOnly: RunInfo = {
  name: "fts_memprofiler",
  workers: [],
  artifacts: [
    { path: "fts_memprofiler/memprofiler/rank_0_memory_stats.yaml", kind: "memprofiler_stats", size_bytes: 2048, state: "ready", error: null },
  ],
};
const runs = [...(runsFixture.runs as RunInfo[]), memoryOnly];

describe("Selectors", () => {
  it("disables Worker and Span with a label for a run of memory artifacts only", () => {
    const onSelect = vi.fn();
    render(<Selectors runs={runs} selection={{ run: "fts_memprofiler", worker: "", span: "" }} onSelect={onSelect} />);
    const worker = screen.getByTestId("worker-select") as HTMLSelectElement;
    const span = screen.getByTestId("span-select") as HTMLSelectElement;
    // they were enabled selects with no options at all
    expect(worker.disabled).toBe(true);
    expect(Array.from(worker.options).map((o) => o.textContent)).toEqual(["\u2014 no traces"]);
    expect(span.disabled).toBe(true);
    expect(Array.from(span.options).map((o) => o.textContent)).toEqual(["\u2014"]);
    expect(worker.closest("label")!.title).toBe("Run fts_memprofiler has no trace files, only memory artifacts: see its Snapshots view");
    // the run select still works
    fireEvent.change(screen.getByTestId("run-select"), { target: { value: runs[0]!.name } });
    expect(onSelect).toHaveBeenCalledWith({ run: runs[0]!.name });
  });

  it("keeps enabled selects with the run's workers and spans otherwise", () => {
    const first = runs[0]!;
    const w = first.workers[0]!;
    render(<Selectors runs={runs} selection={{ run: first.name, worker: w.worker, span: w.spans[0]!.span }} onSelect={() => {}} />);
    const worker = screen.getByTestId("worker-select") as HTMLSelectElement;
    expect(worker.disabled).toBe(false);
    expect(Array.from(worker.options).map((o) => o.value)).toEqual(first.workers.map((x) => x.worker));
    expect((screen.getByTestId("span-select") as HTMLSelectElement).options).toHaveLength(w.spans.length);
  });
});
