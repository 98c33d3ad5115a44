import { describe, expect, it } from "vitest";
import type { RunsResponse } from "../api/types";
import runsFixture from "../__fixtures__/runs.json";
import { findSpan, isAnythingLoading, resolveSelection } from "./selection";

const data = runsFixture as RunsResponse;

function sel(run: string, worker: string, span: string): { run: string; worker: string; span: string } {
  return { run, worker, span };
}

/** The first run, worker and span of the fixture. */
const FIRST = sel("resnet50_num_workers_0", "worker0", "1");

describe("resolveSelection", () => {
  it("keeps a selection that exists, odd characters included", () => {
    expect(
      resolveSelection(data.runs, { run: "runs/2024 05/bert #3 & friends/ñ", worker: "host-a_123", span: "2" }),
    ).toEqual({ run: "runs/2024 05/bert #3 & friends/ñ", worker: "host-a_123", span: "2" });
  });

  it("falls back to the first run, worker and span when the hash is empty", () => {
    expect(resolveSelection(data.runs, {})).toEqual(FIRST);
  });

  it("falls back to the first run when the run is unknown", () => {
    expect(resolveSelection(data.runs, sel("gone", "host-a_123", "7"))).toEqual(sel(FIRST.run, "worker0", "1"));
    // Worker and span names that exist in the fallback run are still honoured.
    expect(resolveSelection(data.runs, sel("gone", "worker0", "2"))).toEqual(sel(FIRST.run, "worker0", "2"));
  });

  it("keeps the run and falls back one level at a time", () => {
    expect(resolveSelection(data.runs, sel(FIRST.run, "worker1", "9"))).toEqual(sel(FIRST.run, "worker1", "1"));
    expect(resolveSelection(data.runs, sel(FIRST.run, "nope", "2"))).toEqual(sel(FIRST.run, "worker0", "2"));
  });

  it("returns null when there is nothing to select", () => {
    expect(resolveSelection([], { run: "x" })).toBeNull();
    expect(resolveSelection([{ name: "empty", workers: [] }], {})).toBeNull();
  });
});

describe("registry helpers", () => {
  it("finds the selected span", () => {
    const span = findSpan(data, { run: "resnet50_num_workers_0", worker: "worker1", span: "1" });
    expect(span?.state).toBe("error");
    expect(span?.error).toBe("gzip stream is truncated (read 1048576 of 35123456 bytes)");
    expect(findSpan(data, { run: "resnet50_num_workers_0", worker: "worker1", span: "2" })).toBeUndefined();
  });

  it("knows when anything is still loading", () => {
    expect(isAnythingLoading(data)).toBe(true);
    const done: RunsResponse = {
      logdir: "/x",
      loading: { files_total: 1, files_done: 1 },
      runs: [
        {
          name: "r",
          workers: [
            {
              worker: "w",
              spans: [{ span: "1", path: "r/w.pt.trace.json", size_bytes: 1, state: "ready", progress: 1, error: null, warnings: [] }],
            },
          ],
        },
      ],
    };
    expect(isAnythingLoading(done)).toBe(false);
  });
});
