import { describe, expect, it } from "vitest";
import { elideMiddle } from "./elide";

describe("elideMiddle", () => {
  it("keeps short text and cuts the middle of long text to exactly max characters", () => {
    expect(elideMiddle("aten::mm", 36)).toBe("aten::mm");
    const a = elideMiddle("autograd::engine::evaluate_function: ConvolutionBackward0", 36);
    const b = elideMiddle("autograd::engine::evaluate_function: AddmmBackward0", 36);
    expect(a).toBe("autograd::engi\u2026 ConvolutionBackward0");
    expect(Array.from(a)).toHaveLength(36);
    expect(a).not.toBe(b);
    expect(b.endsWith("AddmmBackward0")).toBe(true);
  });
  it("counts code points, never splitting a surrogate pair", () => {
    const text = "\u{1F600}".repeat(50);
    expect(Array.from(elideMiddle(text, 10))).toHaveLength(10);
  });
});
