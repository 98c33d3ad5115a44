import { describe, expect, it } from "vitest";
import type { SnapshotBand, SnapshotTimelineReady } from "../../api/types";
import { bandsCaption } from "./options";

const band = (bytes: number, before = false): SnapshotBand => ({
  alloc_time: 0,
  free_time: null,
  bytes,
  stack: -1,
  frame: null,
  before_history: before,
  blocks: before ? 61 : 1,
});

function timeline(extra: Partial<SnapshotTimelineReady>): SnapshotTimelineReady {
  return {
    state: "ready",
    device: "GPU0",
    start: 0,
    end: 10,
    time_unit: "us",
    active_bytes: [],
    reserved_bytes: [],
    bands: [band(264_351_744, true), band(8 << 20), band(16 << 20)],
    markers: [],
    ...extra,
  };
}

describe("bandsCaption", () => {
  it("says how many live allocations are left out, how large at most, and the band before the history", () => {
    const text = bandsCaption(timeline({ bands_alive: 1344, bands_left_out: 1342, left_out_max_bytes: 8 << 20 }));
    expect(text).toContain("2 largest of 1,344 live allocations drawn");
    expect(text).toContain("the other 1,342, none over 8");
    expect(text).toContain("are in the Active curve only");
    expect(text).toContain("allocated before the history began");
  });

  it("all drawn", () => {
    expect(bandsCaption(timeline({ bands_alive: 2, bands_left_out: 0, left_out_max_bytes: null }))).toMatch(/^all 2 live allocations drawn/);
  });

  it("an older server without the counts", () => {
    expect(bandsCaption(timeline({ bands: [band(5)] }))).toBe("1 largest live allocations drawn");
  });
});
