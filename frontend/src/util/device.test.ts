import { describe, expect, it } from "vitest";
import { deviceLabel } from "./device";

describe("deviceLabel", () => {
  it("names a device as the GPU summary and the timeline do", () => {
    const cases: [string, string][] = [["GPU0", "GPU 0"], ["GPU12", "GPU 12"], ["XPU1", "XPU 1"], ["GPU 2", "GPU 2"], ["CPU", "CPU"], ["", ""]];
    expect(cases.map(([key]) => deviceLabel(key))).toEqual(cases.map(([, label]) => label));
  });
});
