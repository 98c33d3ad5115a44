import { describe, expect, it } from "vitest";
import type { InsightsReady } from "../../api/types";
import insightsH100 from "../../__fixtures__/distributed/insights_h100.json";
import insightsDlrm from "../../__fixtures__/distributed/insights_dlrm_rank0.json";
import { binLabel, exposedPercents, gbpsText, histogramBins, shareText } from "./model";
import { histogramOption } from "./charts";

const h100 = insightsH100 as unknown as InsightsReady;
const dlrm = insightsDlrm as unknown as InsightsReady;

describe("histogram bin labels", () => {
  it("labels every bin of the server's edges, with ∞ for the null last edge", () => {
    const bins = histogramBins(h100.launch.delay_histogram);
    expect(bins.map((b) => b.label)).toEqual([
      "0–1 µs",
      "1–2 µs",
      "2–5 µs",
      "5–10 µs",
      "10–20 µs",
      "20–50 µs",
      "50–100 µs",
      "100–200 µs",
      "200–500 µs",
      "500 µs–1 ms",
      "1–5 ms",
      "5–10 ms",
      "≥10 ms",
    ]);
    expect(bins.map((b) => b.count)).toEqual(h100.launch.delay_histogram.counts);
  });

  it("formats single bins", () => {
    expect(binLabel(1, 2)).toBe("1–2 µs");
    expect(binLabel(10000, null)).toBe("≥10 ms");
    expect(binLabel(200, null)).toBe("≥200 µs");
    expect(binLabel(0.5, 1)).toBe("0.50–1 µs");
  });

  it("puts the labels on the histogram's category axis and escapes tooltips", () => {
    const opt = histogramOption({ edges_us: [0, 1, null], counts: [3, 1] }, "<b>Kernels</b>", "#000", "#111");
    expect((opt.xAxis as { data: string[] }).data).toEqual(["0–1 µs", "≥1 µs"]);
    const fmt = (opt.tooltip as { formatter: (p: unknown) => string }).formatter;
    const html = fmt([{ dataIndex: 0 }]);
    expect(html).toContain("&lt;b&gt;Kernels&lt;/b&gt;: 3 (75.0 %)");
    expect(html).not.toContain("<b>Kernels");
  });
});

describe("exposed-time percentages", () => {
  it.each([
    ["h100", h100],
    ["dlrm rank 0", dlrm],
  ])("sum to exactly 100 for %s", (_name, data) => {
    const parts = exposedPercents(data.exposed);
    const sum = parts.reduce((a, p) => a + p.pct * 10, 0) / 10;
    expect(sum).toBe(100);
    // the parts in µs add up to the window (server guarantee), so the shares follow it
    const us = parts.reduce((a, p) => a + p.us, 0);
    expect(us).toBeCloseTo(data.exposed.window_us, 3);
  });

  it("matches the real DLRM numbers", () => {
    // compute 1034, exposed comm 5537, memcpy 19, idle 7865 of a 14455 µs window
    expect(exposedPercents(dlrm.exposed).map((p) => p.pct)).toEqual([7.2, 38.3, 0.1, 54.4]);
  });

  it("is all zero for an empty window", () => {
    const parts = exposedPercents({ compute_us: 0, exposed_comm_us: 0, exposed_memcpy_us: 0, idle_us: 0 });
    expect(parts.every((p) => p.pct === 0)).toBe(true);
  });
});

describe("small formatters", () => {
  it("shows null as a dash", () => {
    expect(gbpsText(null)).toBe("–");
    expect(gbpsText(24.85252)).toBe("24.85 GB/s");
    expect(shareText(0.65)).toBe("65.0 %");
    expect(shareText(null)).toBe("–");
  });
});
