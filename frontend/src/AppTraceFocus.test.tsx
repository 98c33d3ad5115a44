// "show in trace" belongs to the (run, worker, span) it was made in. After picking
// another run, its Trace view opens whole, with nothing selected (no event fetched, full window).
import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import operatorsFixture from "./__fixtures__/operators_resnet50.json";
import overviewFixture from "./__fixtures__/overview_resnet50.json";
import runsFixture from "./__fixtures__/runs.json";
import { App } from "./App";
import { TEST_HOOKS_KEY } from "./views/trace/testHooks";
import { json, query, resetPage, stubFetch } from "./testing/fetch";

vi.mock("./components/EChart", () => ({ EChart: (props: { testId?: string }) => <div data-testid={props.testId ?? "echart"} /> }));

const OTHER = "runs/2024 05/bert #3 & friends/ñ";
const meta = {
  state: "ready", origin_us: 0, base_time_ns: null, wall_origin_us: 0, end_us: 1000, steps: [],
  tracks: [{ id: 3, kind: "stream", process: "GPU 0", name: "stream 7", max_depth: 0, events: 1 }],
};
const timeline = {
  state: "ready", start_us: 0, end_us: 1000, width_px: 800, counters: [], names: { "1": "k" },
  tracks: [{ id: 3, level: 0, bucket_us: 0, hidden_events: 0, items: { start: [200], dur: [40], depth: [0], name: [1], count: [1], row: [7] } }],
};
const event = { state: "ready", row: 7, name: "k", category: "Kernel", start_us: 200, dur_us: 40, track: 3, args: {}, parents: [], flows: [] };
const requests: string[] = [];

beforeEach(async () => {
  requests.length = 0;
  window.localStorage.setItem(TEST_HOOKS_KEY, "1");
  stubFetch((url) => {
    if (url === "runs") return json(runsFixture);
    if (url.startsWith("overview?")) return json(overviewFixture);
    if (url.startsWith("operators?"))
      return json({ ...operatorsFixture, rows: operatorsFixture.rows.map((r, i) => ({ ...r, longest_row: 100 + i })) });
    if (url.startsWith("modules?")) return json({ state: "ready", modules: null });
    if (url.startsWith("timeline_meta?")) return json(meta);
    if (url.startsWith("timeline_event?")) return json({ ...event, row: Number(query(url).get("row")) });
    if (url.startsWith("timeline?")) return json(timeline);
    return new Response(JSON.stringify({ error: "not found" }), { status: 404 });
  }, requests);
  await resetPage("#run=resnet50_num_workers_0&worker=worker0&span=1&view=operator");
});

afterEach(() => {
  vi.unstubAllGlobals();
  window.localStorage.removeItem(TEST_HOOKS_KEY);
});

describe("show in trace", () => {
  it("zooms in its own file, and another run's Trace opens whole with nothing selected", async () => {
    render(<App />);
    fireEvent.click((await screen.findAllByTestId("show-in-trace"))[0]!);
    await waitFor(() => expect(requests.some((u) => u.startsWith("timeline_event?") && u.includes("row=100"))).toBe(true));
    await waitFor(() => expect(window.__kinetoscopeTimeline?.getWindow()?.end).toBeLessThan(1000));

    fireEvent.change(screen.getByTestId("run-select"), { target: { value: OTHER } });
    const inOther = (u: string) => new URLSearchParams(u.slice(u.indexOf("?") + 1)).get("run") === OTHER;
    await waitFor(() => expect(requests.some((u) => u.startsWith("timeline?") && inOther(u))).toBe(true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(requests.filter((u) => u.startsWith("timeline_event?") && inOther(u))).toEqual([]);
    expect(window.__kinetoscopeTimeline?.getWindow()).toEqual({ start: 0, end: 1000 });
    expect(screen.queryByTestId("timeline-details")).toBeNull();
  });
});
