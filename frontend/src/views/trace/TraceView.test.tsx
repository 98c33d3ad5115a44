import { fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { TimelineEvent, TimelineMeta, TimelineResponse } from "../../api/types";
import { TEST_HOOKS_KEY } from "./testHooks";
import { TraceView } from "./TraceView";
import { json, query as q, stubFetch } from "../../testing/fetch";
import { readyMeta, readyTimeline } from "../../testing/timeline";

const SEL = { run: "r", worker: "w0", span: "1" };
let requests: string[] = [];

const meta = (wall: number): TimelineMeta =>
  readyMeta(
    [{ id: 3, kind: "stream", process: "GPU 0", name: "stream 7", max_depth: 0, events: 2 }],
    [{ step: "5", start_us: 100, end_us: 600 }],
    wall,
  );

const timeline: TimelineResponse = readyTimeline(
  800,
  [{ id: 3, level: 0, bucket_us: 0, hidden_events: 0, items: { start: [200], dur: [40], depth: [0], name: [1], count: [1], row: [7] } }],
  { "1": "sgemm_kernel" },
);

const event: TimelineEvent = {
  row: 7,
  name: "sgemm_kernel",
  category: "Kernel",
  start_us: 200,
  dur_us: 40,
  track: 3,
  args: { grid: [1, 2, 3], stream: 7 },
  parents: [],
  flows: [{ type: "launch", row: 3, name: "cudaLaunchKernel", track: 0, start_us: 190, dur_us: 5 }],
};

beforeEach(() => {
  window.localStorage.setItem(TEST_HOOKS_KEY, "1");
  requests = stubFetch((url) => {
    const worker = q(url).get("worker");
    if (url.startsWith("timeline_meta?")) return json(meta(worker === "w1" ? 5000 : 1000));
    if (url.startsWith("timeline_event?")) return json({ ...event, row: Number(q(url).get("row")), state: "ready" });
    if (url.startsWith("timeline_search?"))
      return json({ total: 1, rows: [7], start_us: [200], dur_us: [40], track: [3], name: ["sgemm_kernel"] });
    if (url.startsWith("timeline?")) return json(timeline);
    if (url.startsWith("timeline_range?"))
      return json({ state: "ready", start_us: 0, end_us: 1, duration_us: 1, count: 3, total_us: 12, names: 1, top: [{ name: "sgemm_kernel", count: 3, total_us: 12 }] });
    return json({ error: "not found" }, 404);
  });
});

afterEach(() => {
  vi.unstubAllGlobals();
  window.localStorage.removeItem(TEST_HOOKS_KEY);
});

describe("TraceView", () => {
  it("loads meta then the whole file's window, and exposes the test hooks", async () => {
    render(<TraceView selection={SEL} />);
    await waitFor(() => expect(requests.some((u) => u.startsWith("timeline?"))).toBe(true));
    const t = q(requests.find((u) => u.startsWith("timeline?"))!);
    expect(t.get("start_us")).toBe("0");
    expect(t.get("end_us")).toBe("1000");
    expect(Number(t.get("width_px"))).toBeGreaterThan(0);
    expect(window.__kinetoscopeTimeline?.getWindow()).toEqual({ start: 0, end: 1000 });
    expect(screen.getByTestId("timeline-canvas").tagName).toBe("CANVAS");
    expect(screen.getByTestId("trace-download").getAttribute("href")).toBe("trace_file?run=r&worker=w0&span=1");
    // the step selector zooms to the step
    fireEvent.change(screen.getByTestId("step-select"), { target: { value: "0" } });
    expect(window.__kinetoscopeTimeline?.getWindow()).toEqual({ start: 100, end: 600 });
    // and shows the chosen step, until the view leaves it
    expect((screen.getByTestId("step-select") as HTMLSelectElement).value).toBe("0");
    fireEvent.click(screen.getByTestId("zoom-reset"));
    expect((screen.getByTestId("step-select") as HTMLSelectElement).value).toBe("");
  });

  it("a focus row zooms to 3x the event and shows its details, args and flows", async () => {
    render(<TraceView selection={SEL} focus={{ row: 7, nonce: 1 }} />);
    const details = await screen.findByTestId("timeline-details");
    await within(details).findByText("sgemm_kernel");
    expect(within(details).getByTestId("event-duration").textContent).toBe("40.000 µs");
    expect(details.textContent).toContain("[1,2,3]");
    expect(window.__kinetoscopeTimeline?.getWindow()).toEqual({ start: 160, end: 280 });
    // clicking the launch partner jumps to it
    fireEvent.click(within(details).getByText("cudaLaunchKernel"));
    await waitFor(() => expect(requests.some((u) => u.startsWith("timeline_event?") && q(u).get("row") === "3")).toBe(true));
    expect(window.__kinetoscopeTimeline?.getWindow()).toEqual({ start: 185, end: 200 });
  });

  it("search shows N matches, then n of N, and next zooms to the match", async () => {
    render(<TraceView selection={SEL} />);
    await waitFor(() => expect(requests.some((u) => u.startsWith("timeline?"))).toBe(true));
    fireEvent.change(screen.getByTestId("timeline-search"), { target: { value: "gemm" } });
    await waitFor(() => expect(screen.getByTestId("match-count").textContent).toBe("1 match"));
    expect(q(requests.find((u) => u.startsWith("timeline_search?"))!).get("q")).toBe("gemm");
    fireEvent.click(screen.getByTestId("match-next"));
    expect(screen.getByTestId("match-count").textContent).toBe("1 of 1");
    expect(window.__kinetoscopeTimeline?.getWindow()).toEqual({ start: 160, end: 280 });
    fireEvent.click(screen.getByTestId("timeline-regex"));
    await waitFor(() => expect(requests.some((u) => u.startsWith("timeline_search?") && q(u).get("regex") === "1")).toBe(true));
  });

  it("all ranks: loads every worker and requests each in its own relative time", async () => {
    render(<TraceView selection={SEL} workers={["w0", "w1"]} />);
    await waitFor(() => expect(requests.some((u) => u.startsWith("timeline?"))).toBe(true));
    fireEvent.click(screen.getByTestId("all-ranks"));
    await waitFor(() => expect(requests.some((u) => u.startsWith("timeline?") && q(u).get("worker") === "w1")).toBe(true));
    // w1 starts 4000 µs after w0 on the wall clock: the shared window covers both
    await waitFor(() => expect(window.__kinetoscopeTimeline?.getWindow()?.end).toBeGreaterThan(1000));
    window.__kinetoscopeTimeline!.setWindow(4100, 4600);
    await waitFor(() =>
      expect(requests.some((u) => u.startsWith("timeline?") && q(u).get("worker") === "w1" && q(u).get("start_us") === "100")).toBe(true),
    );
    const w0 = requests.filter((u) => u.startsWith("timeline?") && q(u).get("worker") === "w0").pop()!;
    expect(q(w0).get("start_us")).toBe("4100");
  });

  it("installs no test hook without the test flag", async () => {
    window.localStorage.removeItem(TEST_HOOKS_KEY);
    render(<TraceView selection={SEL} />);
    await waitFor(() => expect(requests.some((u) => u.startsWith("timeline?"))).toBe(true));
    expect(window.__kinetoscopeTimeline).toBeUndefined();
  });
});
