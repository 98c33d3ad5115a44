import { describe, expect, it } from "vitest";
import { legendChartBase } from "./legendChartBase";

describe("legendChartBase", () => {
  it("puts the legend on top in the text colour and keeps the given margins", () => {
    const base = legendChartBase("#123456", { left: 1, right: 2, top: 3, bottom: 4 });
    expect(base).toEqual({
      backgroundColor: "transparent",
      animation: false,
      textStyle: { color: "#123456" },
      legend: { type: "plain", top: 0, textStyle: { color: "#123456" } },
      grid: { left: 1, right: 2, top: 3, bottom: 4, containLabel: true },
    });
  });
});
