import { act, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { RunsResponse } from "../api/types";
import runsFixture from "../__fixtures__/diff/runs.json";
import { Selectors } from "../components/Selectors";
import { useHashSelection } from "../hooks/useHashSelection";
import { POLL_IDLE_MS, useRuns } from "../hooks/useRuns";
import { stableRuns } from "./stableRuns";

const base = runsFixture as unknown as RunsResponse;

function clone(r: RunsResponse): RunsResponse {
  return JSON.parse(JSON.stringify(r)) as RunsResponse;
}

/** The registry after the job wrote span 3 of nw4 and a new run appeared. */
function grown(): RunsResponse {
  const next = clone(base);
  const w = next.runs.find((r) => r.name === "nw4")!.workers[0]!;
  w.spans.push({ ...w.spans[1]!, span: "3", path: "nw4/worker0.3.pt.trace.json.gz", state: "loading", progress: 0.2 });
  next.runs.unshift({ name: "a_new_run", workers: [{ worker: "w", spans: [{ ...w.spans[0]!, path: "a_new_run/w.pt.trace.json" }] }] });
  return next;
}

describe("stableRuns", () => {
  it("keeps the previous answer when nothing changed", () => {
    const prev = clone(base);
    expect(stableRuns(prev, clone(base))).toBe(prev);
    expect(stableRuns(null, prev)).toBe(prev);
  });

  it("keeps unchanged runs and replaces only the changed one", () => {
    const prev = clone(base);
    const next = stableRuns(prev, grown());
    expect(next).not.toBe(prev);
    expect(next.runs.map((r) => r.name)).toEqual(["a_new_run", "composer", "nw0", "nw4"]);
    expect(next.runs[1]).toBe(prev.runs[0]);
    expect(next.runs[2]).toBe(prev.runs[1]);
    expect(next.runs[3]).not.toBe(prev.runs[2]);
    expect(next.runs[3]!.workers[0]!.spans.map((s) => s.span)).toEqual(["1", "2", "3"]);
  });
});

/** Every registry answer the component rendered with: a new one means a re-render down the tree. */
const seen = new Set<RunsResponse>();

function Harness() {
  const { data } = useRuns();
  const { selection, select } = useHashSelection(data);
  if (data) seen.add(data);
  return data && selection ? <Selectors runs={data.runs} selection={selection} onSelect={select} /> : null;
}

describe("live runs: polling the registry", () => {
  let served: RunsResponse;
  beforeEach(async () => {
    window.history.replaceState(null, "", "/data/plugin_entry.html?name=kinetoscope");
    window.sessionStorage.clear();
    await new Promise((resolve) => setTimeout(resolve, 0));
    served = clone(base);
    vi.useFakeTimers();
    vi.stubGlobal("fetch", async (input: string) => {
      if (input !== "runs") return new Response("{}", { status: 404 });
      return new Response(JSON.stringify(served), { status: 200, headers: { "Content-Type": "application/json" } });
    });
  });
  afterEach(() => {
    vi.useRealTimers();
    vi.unstubAllGlobals();
  });

  it("shows new spans and runs without re-mounting the selectors or changing the selection", async () => {
    render(<Harness />);
    await act(async () => {
      await vi.advanceTimersByTimeAsync(10);
    });
    const runSelect = screen.getByTestId("run-select") as HTMLSelectElement;
    fireEvent.change(runSelect, { target: { value: "nw4" } });
    const spanSelect = screen.getByTestId("span-select") as HTMLSelectElement;
    fireEvent.change(spanSelect, { target: { value: "2" } });
    expect(spanSelect.value).toBe("2");
    const hash = window.location.hash;
    expect(hash).toBe("#run=nw4&worker=worker0&span=2");

    // (happy-dom fires hashchange for replaceState; let it pass)
    await act(async () => {
      await vi.advanceTimersByTimeAsync(10);
    });
    // an idle poll that brings nothing new keeps the same answer object: nothing below re-renders
    const before = seen.size;
    await act(async () => {
      served = clone(base);
      await vi.advanceTimersByTimeAsync(POLL_IDLE_MS + 10);
    });
    expect(seen.size).toBe(before);
    expect(before).toBe(1);

    // the job writes span 3 and another run appears
    await act(async () => {
      served = grown();
      await vi.advanceTimersByTimeAsync(POLL_IDLE_MS + 10);
    });
    expect(screen.getByTestId("span-select")).toBe(spanSelect);
    expect(screen.getByTestId("run-select")).toBe(runSelect);
    expect([...spanSelect.options].map((o) => o.textContent)).toEqual(["1", "2", "3 (loading 20 %)"]);
    expect([...runSelect.options].map((o) => o.value)).toEqual(["a_new_run", "composer", "nw0", "nw4"]);
    expect(runSelect.value).toBe("nw4");
    expect(spanSelect.value).toBe("2");
    expect(window.location.hash).toBe(hash);
  });
});
