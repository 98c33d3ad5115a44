import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { beforeEach, describe, expect, it, vi } from "vitest";
import type { ArtifactInfo, SnapshotOomReady, SnapshotRanksReady } from "../../api/types";
import { SnapshotView } from "./SnapshotView";
import { json, query, stubFetch } from "../../testing/fetch";

vi.mock("../memory/MemChart", () => ({
  MemChart: (props: { ariaLabel: string; testId?: string }) => <div data-testid={props.testId ?? "memchart"} aria-label={props.ariaLabel} />,
}));

const MIB = 1 << 20;
const SUMMARY = {
  state: "ready", path: "job/rank0_oom.pickle", layout: "snapshot", time_unit: "us", history_recorded: false,
  devices: [], segment_devices: [], annotations: [], markers: {},
};
const OOM: SnapshotOomReady = {
  state: "ready", path: "job/rank0_oom.pickle", device: "GPU0", detected_by: "history",
  oom: { index: 14, time: 140, requested_bytes: 10 * MIB, device_free_bytes: 5 * MIB, stream: 0, active_bytes_at_oom: 16 * MIB, reserved_bytes_at_oom: 42 * MIB },
  ooms: [{ index: 14, time: 140, requested_bytes: 10 * MIB }], state_at: "oom", entries_after_oom: 0,
  streams: [{ stream: 0, segments: 3, reserved_bytes: 26 * MIB, allocated_bytes: 17 * MIB, free_bytes: 9 * MIB, largest_free_block_bytes: 6 * MIB, free_blocks: 3, fragmentation_pct: 100 / 3, is_oom_stream: true }],
  totals: { segments: 4, reserved_bytes: 42 * MIB, allocated_bytes: 17 * MIB, free_bytes: 25 * MIB, largest_free_block_bytes: 16 * MIB, free_blocks: 4, fragmentation_pct: 36 },
  dump_totals: { segments: 4, reserved_bytes: 42 * MIB, allocated_bytes: 17 * MIB, free_bytes: 25 * MIB, largest_free_block_bytes: 16 * MIB, free_blocks: 4, fragmentation_pct: 36 },
  largest_live: [{ bytes: 8 * MIB, stack: 0, frame: "/w/model.py:10:build_weights", time: 10, before_history: false }],
  growth: { last_n: 1000, entries: 14, start_time: 0, net_bytes: 13 * MIB, rows: [{ frame: "/w/model.py:10:build_weights", stack: 0, net_bytes: 8 * MIB, allocated_bytes: 8 * MIB, freed_bytes: 0, allocs: 1, frees: 0 }] },
};
const RANKS: SnapshotRanksReady = {
  state: "ready", path: "job/rank0_oom.pickle", median_peak_bytes: 101 * MIB, max_peak_bytes: 150 * MIB, min_peak_bytes: 98 * MIB,
  outlier_rank: 1, outlier_peak_to_median: 150 / 101, outlier_vs_median_pct: (150 / 101 - 1) * 100, outlier_threshold: 0.1, outlier_threshold_pct: 10,
  ranks: [
    { rank: 0, run: "job", path: "job/rank0_oom.pickle", state: "ready", error: null, peak_active_bytes: 100 * MIB, device: "GPU0", peak_time: 1, peak_to_median: 100 / 101, vs_median_pct: (100 / 101 - 1) * 100 },
    { rank: 1, run: "job", path: "job/rank1_oom.pickle", state: "ready", error: null, peak_active_bytes: 150 * MIB, device: "GPU0", peak_time: 1, peak_to_median: 150 / 101, vs_median_pct: (150 / 101 - 1) * 100 },
  ],
};
const ARTIFACTS: ArtifactInfo[] = [
  { path: "job/rank0_oom.pickle", kind: "snapshot", size_bytes: 10, state: "ready", error: null, rank: 0, taken_on_oom: true },
  { path: "job/rank1_oom.pickle", kind: "snapshot", size_bytes: 10, state: "ready", error: null, rank: 1, taken_on_oom: true },
  { path: "job/rank0.2.pt.trace.memory.html", kind: "memory_html", size_bytes: 99, state: "ready", error: null, rank: 0, batch: 2, trace: { worker: "rank0", span: "2" } },
];
let requests: string[] = [];

beforeEach(() => {
  requests = stubFetch((url) => {
    if (url.startsWith("snapshot?")) return json({ ...SUMMARY, path: query(url).get("path") });
    if (url.startsWith("snapshot_oom?")) return json(OOM);
    if (url.startsWith("snapshot_ranks?")) return json(RANKS);
    if (url.startsWith("memory_html?")) return json({ state: "ready", path: query(url).get("path"), content_type: "image/png", width_px: 9, height_px: 4, image_bytes: 80, html_bytes: 300 });
    return new Response("{}", { status: 404 });
  });
});

describe("memory forensics panels", () => {
  it("opens a snapshot dumped on an OOM on the OOM, and names the outlier rank", async () => {
    render(<SnapshotView run="job" artifacts={ARTIFACTS} theme="light" />);
    expect((await screen.findByTestId("oom-requested")).textContent).toContain("10.0 MiB (10,485,760 B)");
    expect(screen.getByTestId("oom-largest-free").textContent).toContain("6.0 MiB");
    expect(screen.getByTestId("oom-fragmentation").textContent).toContain("36.0 %");
    expect(screen.getByTestId("oom-growth").textContent).toContain("/w/model.py:10:build_weights");
    expect((await screen.findByTestId("snapshot-outlier")).textContent).toContain("Rank 1 is the outlier: its peak is 48.5 % above the median (101.0 MiB)");
    fireEvent.click(screen.getAllByTestId("snapshot-rank-row")[1]!);
    await waitFor(() => expect(requests.some((u) => u.startsWith("snapshot?") && u.includes("rank1_oom"))).toBe(true));
  });

  it("shows the served vs-median percentages, not ones recomputed from the ratios", async () => {
    const served = {
      ...RANKS,
      outlier_vs_median_pct: 12.5,
      ranks: [{ ...RANKS.ranks[0]!, vs_median_pct: -3.25 }, { ...RANKS.ranks[1]!, vs_median_pct: 12.5 }],
    };
    stubFetch((url) => {
      if (url.startsWith("snapshot_ranks?")) return json(served);
      if (url.startsWith("snapshot?")) return json({ ...SUMMARY, path: query(url).get("path") });
      if (url.startsWith("snapshot_oom?")) return json(OOM);
      return new Response("{}", { status: 404 });
    });
    render(<SnapshotView run="job" artifacts={ARTIFACTS.slice(0, 2)} theme="light" />);
    expect((await screen.findByTestId("snapshot-outlier")).textContent).toContain("its peak is 12.5 % above the median");
    const rows = screen.getAllByTestId("snapshot-rank-row").map((r) => r.textContent);
    expect(rows[0]).toContain("-3.3 %");
    expect(rows[1]).toContain("+12.5 %");
  });

  it("shows a memory-timeline HTML file as its extracted image only", async () => {
    const opened: string[] = [];
    render(<SnapshotView run="job" artifacts={[ARTIFACTS[2]!]} theme="light" onOpenTrace={(w, s) => opened.push(`${w}/${s}`)} />);
    const img = await screen.findByTestId("memory-html-image");
    expect(img.getAttribute("src")).toBe("memory_html_image?run=job&path=job%2Frank0.2.pt.trace.memory.html");
    expect(screen.getByTestId("memory-html-about").textContent).toContain("Rank 0, batch 2; trace: worker rank0, span 2");
    fireEvent.click(screen.getByTestId("memory-html-open-trace"));
    expect(opened).toEqual(["rank0/2"]);
  });
});
