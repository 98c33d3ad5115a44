import { describe, expect, it } from "vitest";
import { deviceIndex, memoryEventsUrl, memoryStatsUrl, memoryTimelineExportUrl, memoryUrl, snapshotStackUrl, snapshotTimelineUrl } from "./routes";

const SEL = { run: "my run/a&b", worker: "w", span: "1" };

function parse(url: string): [string, Record<string, string>] {
  const [route, qs] = url.split("?") as [string, string];
  return [route, Object.fromEntries(new URLSearchParams(qs))];
}

describe("memory URLs", () => {
  it("asks for the curve at a window and width", () => {
    expect(parse(memoryUrl(SEL, null, 1600))).toEqual(["memory", { run: "my run/a&b", worker: "w", span: "1", width_px: "1600" }]);
    expect(parse(memoryUrl(SEL, { start_us: 1.23456789, end_us: 2000 }, 799.6))[1]).toMatchObject({
      start_us: "1.235",
      end_us: "2000",
      width_px: "800",
    });
  });

  it("events: range, size filters, search, sort and paging; the CSV has the same filters without paging", () => {
    const q = {
      device: "GPU0",
      range: { start_us: 2163.5, end_us: 3260.25 },
      min_bytes: 1048576,
      max_bytes: 2 * 1024 ** 3,
      search: "addmm",
      sort: "size_bytes",
      order: "asc" as const,
      offset: 100,
      limit: 100,
    };
    const [route, params] = parse(memoryEventsUrl(SEL, q));
    expect(route).toBe("memory_events");
    expect(params).toEqual({
      run: "my run/a&b",
      worker: "w",
      span: "1",
      device: "GPU0",
      start_us: "2163.5",
      end_us: "3260.25",
      min_bytes: "1048576",
      max_bytes: "2147483648",
      search: "addmm",
      sort: "size_bytes",
      order: "asc",
      offset: "100",
      limit: "100",
    });
    const [csvRoute, csv] = parse(memoryEventsUrl(SEL, q, false));
    expect(csvRoute).toBe("memory_events.csv");
    expect(csv.offset).toBeUndefined();
    expect(csv.limit).toBeUndefined();
    expect(csv.min_bytes).toBe("1048576");
    expect(csv.start_us).toBe("2163.5");
  });

  it("leaves out what is not set (no range, no size filter, server's default sort)", () => {
    const [, params] = parse(memoryEventsUrl(SEL, { device: "GPU1", range: null, min_bytes: null, search: "" }));
    expect(params).toEqual({ run: "my run/a&b", worker: "w", span: "1", device: "GPU1" });
    const [route, stats] = parse(memoryStatsUrl(SEL, { device: "GPU0", range: { start_us: 0, end_us: 10 }, order: "asc" }));
    expect(route).toBe("memory_stats");
    expect(stats).toEqual({ run: "my run/a&b", worker: "w", span: "1", device: "GPU0", start_us: "0", end_us: "10" });
    expect(memoryStatsUrl(SEL, { device: "GPU0", range: null, sort: "calls", order: "desc", offset: 0, limit: 5 }, false)).toBe(
      "memory_stats.csv?run=my+run%2Fa%26b&worker=w&span=1&device=GPU0&sort=calls&order=desc",
    );
  });

  it("snapshot routes", () => {
    const a = { run: "snap", path: "snap/x y.pickle" };
    expect(snapshotTimelineUrl(a, 0, null, 1200)).toBe("snapshot_timeline?run=snap&path=snap%2Fx+y.pickle&device=0&width_px=1200");
    expect(parse(snapshotTimelineUrl(a, 1, { start: 10, end: 20.5 }, 1000))[1]).toMatchObject({ start: "10", end: "20.5", device: "1" });
    expect(snapshotStackUrl(a, 7)).toBe("snapshot_stack?run=snap&path=snap%2Fx+y.pickle&stack=7");
    expect(memoryTimelineExportUrl(a)).toBe("memory_timeline_export?run=snap&path=snap%2Fx+y.pickle");
    expect(deviceIndex("GPU3")).toBe(3);
    expect(deviceIndex(2)).toBe(2);
  });
});
