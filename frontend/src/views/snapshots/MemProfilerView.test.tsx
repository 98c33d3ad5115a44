// The MemProfiler files in the Snapshots tab: the stats YAML (default choice) as a chart and a table
// with the synthesizer's known values, the FSDP report as text (never HTML).
import { fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import stats from "../../__fixtures__/memory/memprofiler_stats_rank1.json";
import type { ArtifactInfo } from "../../api/types";
import { SnapshotView } from "./SnapshotView";
import { json, stubFetch } from "../../testing/fetch";

vi.mock("../../components/EChart", () => ({
  EChart: (props: { ariaLabel: string; testId?: string }) => <div data-testid={props.testId ?? "echart"} aria-label={props.ariaLabel} />,
}));

const BASE = "job/memprofiler/";
const ARTIFACTS: ArtifactInfo[] = [
  { path: `${BASE}cuda_alloc_rank_1.training_step.2.end.pickle`, kind: "snapshot", size_bytes: 11998, state: "ready", error: null },
  { path: `${BASE}fsdp_mem_rank_1_training_step_2.log`, kind: "memprofiler_log", size_bytes: 60, state: "ready", error: null },
  { path: `${BASE}rank_1_memory_stats.yaml`, kind: "memprofiler_stats", size_bytes: 10524, state: "ready", error: null },
];
const LOG = "Iteration 2 training_step Peak FSDP memory stats:\n<b>not bold</b>\n";

beforeEach(() => {
  stubFetch((url) => {
    if (url.startsWith("memprofiler_stats?")) return json(stats);
    if (url.startsWith("memprofiler_log?")) {
      return json({ state: "ready", path: ARTIFACTS[1]!.path, text: LOG, size_bytes: 3 << 20, truncated: true });
    }
    return new Response("{}", { status: 404 });
  });
});

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("MemProfiler files", () => {
  it("opens the stats file first and shows the known values", async () => {
    render(<SnapshotView run="job" artifacts={ARTIFACTS} theme="light" />);
    expect((screen.getByTestId("artifact-select") as HTMLSelectElement).value).toBe(`${BASE}rank_1_memory_stats.yaml`);
    const table = await screen.findByTestId("memprofiler-table");
    expect(screen.getByTestId("memprofiler-stats").textContent).toContain("MemProfiler snapshots, rank 1");
    expect(screen.getByTestId("memprofiler-chart")).toBeTruthy();
    const row = within(table).getAllByTestId("memprofiler-row").find((r) => r.getAttribute("data-key") === "reserved_bytes.all.current")!;
    const cells = within(row).getAllByTestId("memprofiler-cell").map((c) => c.textContent);
    expect(cells).toEqual(["2.0 GiB", "2.2 GiB", "128.0 MiB"]); // 2080 MiB, 2208 MiB, +128 MiB
    const before = within(table).getAllByTestId("memprofiler-row").length;
    fireEvent.click(screen.getByTestId("memprofiler-all"));
    await waitFor(() => expect(within(table).getAllByTestId("memprofiler-row").length).toBeGreaterThan(before));
  });

  it("shows an FSDP report as text with its truncation notice", async () => {
    render(<SnapshotView run="job" artifacts={ARTIFACTS} theme="light" />);
    fireEvent.change(screen.getByTestId("artifact-select"), { target: { value: ARTIFACTS[1]!.path } });
    const pre = await screen.findByTestId("memprofiler-log");
    expect(pre.textContent).toBe(LOG);
    expect(pre.querySelector("b")).toBeNull();
    expect(screen.getByTestId("memprofiler-log-card").textContent).toContain("of 3.0 MiB");
  });
});
