import { describe, expect, it } from "vitest";
import { argText } from "./EventDetails";
import { axisTime, peakLabelPosition } from "../memory/options";

describe("event arguments as text", () => {
  it("rounds raw floats by the one rule and leaves integers and strings alone", () => {
    expect(argText(2.30303)).toBe("2.303");
    expect(argText(99.99999999999991)).toBe("100");
    expect(argText(1234567)).toBe("1234567");
    expect(argText("void at::native::kernel<float>")).toBe("void at::native::kernel<float>");
    expect(argText([1, 2.5, 0.000123456])).toBe("[1,2.5,0.000123]");
    expect(argText({ a: 1 })).toBe('{"a":1}');
  });
});

describe("the memory curve's peak label", () => {
  it("sits above the peak, or beside it near an edge so it is not cut", () => {
    expect(peakLabelPosition(50, 0, 100)).toBe("top");
    expect(peakLabelPosition(95, 0, 100)).toBe("left");
    expect(peakLabelPosition(3, 0, 100)).toBe("right");
    expect(peakLabelPosition(5, 5, 5)).toBe("top");
  });
});

describe("memory time-axis labels", () => {
  it("write the origin as 0 and other ticks as durations", () => {
    expect(axisTime(0)).toBe("0");
    expect(axisTime(20_000)).toBe("20.00 ms");
  });
});
