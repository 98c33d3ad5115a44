import { fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import snapshotFixture from "../../__fixtures__/memory/snapshot.json";
import timelineFixture from "../../__fixtures__/memory/snapshot_timeline.json";
import segmentsFixture from "../../__fixtures__/memory/snapshot_segments.json";
import allocationsFixture from "../../__fixtures__/memory/snapshot_allocations.json";
import attributionFixture from "../../__fixtures__/memory/snapshot_attribution.json";
import stackFixture from "../../__fixtures__/memory/snapshot_stack.json";
import errorFixture from "../../__fixtures__/memory/snapshot_error.json";
import exportFixture from "../../__fixtures__/memory/memory_timeline_export.json";
import type { ArtifactInfo } from "../../api/types";
import { SnapshotView } from "./SnapshotView";
import { json, query, stubFetch } from "../../testing/fetch";

vi.mock("../memory/MemChart", () => ({
  MemChart: (props: { ariaLabel: string; testId?: string }) => <div data-testid={props.testId ?? "memchart"} aria-label={props.ariaLabel} />,
}));

const GOOD = "snap/memory_forward_bf16_128.pickle";
const EVIL = "snap/evil.pickle";
const ARTIFACTS: ArtifactInfo[] = [
  { path: EVIL, kind: "snapshot", size_bytes: 42, state: "ready", error: null },
  { path: GOOD, kind: "snapshot", size_bytes: 646368, state: "ready", error: null },
  { path: "mt/memory_timeline.raw.gz", kind: "memory_timeline", size_bytes: 64683, state: "ready", error: null },
];
let requests: string[] = [];

beforeEach(() => {
  requests = stubFetch((url) => {
    const path = query(url).get("path");
    if (path === EVIL) return json(errorFixture);
    if (url.startsWith("snapshot?")) return json(snapshotFixture);
    if (url.startsWith("snapshot_timeline?")) return json(timelineFixture);
    if (url.startsWith("snapshot_segments?")) return json(segmentsFixture);
    if (url.startsWith("snapshot_allocations?")) return json(allocationsFixture);
    if (url.startsWith("snapshot_stack?")) return json(stackFixture);
    if (url.startsWith("snapshot_attribution?")) return json(attributionFixture);
    if (url.startsWith("memory_timeline_export?")) return json(exportFixture);
    return new Response("{}", { status: 404 });
  });
});

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("SnapshotView", () => {
  it("shows the summary, timeline bands, segments and top allocations of a real snapshot", async () => {
    render(<SnapshotView run="snap" artifacts={ARTIFACTS.slice(1)} theme="light" />);
    expect((screen.getByTestId("artifact-select") as HTMLSelectElement).value).toBe(GOOD);
    const peak = await screen.findByTestId("snapshot-peak-GPU0");
    expect(peak.textContent).toContain("743.7 MiB (779,837,440 B)");
    const timeline = await screen.findByTestId("snapshot-timeline");
    expect(Number(timeline.getAttribute("data-bands"))).toBe(timelineFixture.bands.length);
    const segments = await screen.findByTestId("snapshot-segments");
    expect(within(segments).getAllByTestId("snapshot-segment")).toHaveLength(segmentsFixture.segments.length);
    const blocks = segments.querySelectorAll(".mem-block");
    expect(blocks.length).toBe(segmentsFixture.segments.reduce((a, s) => a + s.blocks.length, 0));
    expect((blocks[0] as HTMLElement).title).toMatch(/^inactive: 20\.0 MiB \(requested 4\.5 MiB\)/);
    // alive at the peak: no trace in this run, so by the allocations' top frame; the weights predate the history
    const alive = await screen.findAllByTestId("snapshot-alive-row");
    expect(alive).toHaveLength(attributionFixture.by_frame.length);
    expect(alive[0]!.textContent).toContain("(before history)");
    expect(alive[0]!.textContent).toContain("499.5 MiB");
    expect(screen.getByTestId("snapshot-alive-trace").textContent).toContain("No trace of this run matches");
    const rows = await screen.findAllByTestId("snapshot-allocation-row");
    expect(rows).toHaveLength(allocationsFixture.rows.length);
    // expanding a row fetches its stack and lists the frames as text
    fireEvent.click(within(rows[0]!).getByRole("button", { name: "Expand" }));
    const frames = await screen.findByTestId("snapshot-frames");
    expect(frames.querySelectorAll("li")).toHaveLength(stackFixture.frames.length);
    expect(requests.some((u) => u.startsWith("snapshot_stack?") && u.includes(`stack=${allocationsFixture.rows[0]!.stack}`))).toBe(true);
    expect(screen.getByTestId("snapshot-annotations").textContent).toContain("Optimizer.zero_grad#AdamW.zero_grad");
  });

  it("a refused pickle is an error card with the server's message", async () => {
    render(<SnapshotView run="snap" artifacts={ARTIFACTS} theme="light" />);
    // the selector offers every artifact; the first one is selected
    fireEvent.change(screen.getByTestId("artifact-select"), { target: { value: EVIL } });
    const card = await screen.findByTestId("error-card");
    expect(card.textContent).toContain("This snapshot could not be read: snap/evil.pickle");
    expect(card.textContent).toContain("refused to load global 'posix.system'");
    expect(screen.queryByTestId("snapshot-timeline")).toBeNull();
    // the other artifacts still open
    fireEvent.change(screen.getByTestId("artifact-select"), { target: { value: GOOD } });
    await screen.findByTestId("snapshot-timeline");
  });

  it("a memory-timeline export is a stacked chart with its peak", async () => {
    render(<SnapshotView run="mt" artifacts={ARTIFACTS.slice(2)} theme="light" />);
    const peak = await screen.findByTestId("memory-timeline-peak");
    expect(peak.textContent).toContain("Peak 2.9 GiB at 98.42 ms");
    expect(peak.textContent).toContain("8 categories");
    expect(screen.getByTestId("memory-timeline-chart")).toBeTruthy();
  });

  it("without recorded history: the notice, no timeline request", async () => {
    stubFetch((url) => {
      if (url.startsWith("snapshot?")) return json({ ...snapshotFixture, history_recorded: false, devices: [] });
      if (url.startsWith("snapshot_segments?")) return json(segmentsFixture);
      return new Response("{}", { status: 404 });
    }, requests);
    render(<SnapshotView run="snap" artifacts={ARTIFACTS.slice(1, 2)} theme="light" />);
    expect((await screen.findByTestId("snapshot-no-history")).textContent).toContain("History not recorded");
    await screen.findByTestId("snapshot-segments");
    await waitFor(() => expect(requests.some((u) => u.startsWith("snapshot_timeline?"))).toBe(false));
  });
});
