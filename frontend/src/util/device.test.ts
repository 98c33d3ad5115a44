import { describe, expect, it } from "vitest";
import { deviceLabel } from "./device";

describe("deviceLabel", () => {
  it("names a device as the GPU summary and the timeline do", () => {
    expect(deviceLabel("GPU0")).toBe("GPU 0");
    expect(deviceLabel("GPU12")).toBe("GPU 12");
    expect(deviceLabel("XPU1")).toBe("XPU 1");
    expect(deviceLabel("GPU 2")).toBe("GPU 2");
    expect(deviceLabel("CPU")).toBe("CPU");
    expect(deviceLabel("")).toBe("");
  });
});
