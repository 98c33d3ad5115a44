import { describe, expect, it } from "vitest";
import { emptyTableText } from "./emptyTable";

describe("emptyTableText", () => {
  it("says the trace has none when no filter is set", () => {
    expect(emptyTableText("GPU kernels", ["", ""])).toBe("This trace has no GPU kernels.");
    expect(emptyTableText("operators", [" ", null, undefined])).toBe("This trace has no operators.");
    expect(emptyTableText("operators", [])).toBe("This trace has no operators.");
  });

  it("says nothing matches when a filter is set", () => {
    expect(emptyTableText("GPU kernels", ["", "aten::mm"])).toBe("No GPU kernels match the filter.");
    expect(emptyTableText("operators", ["conv"])).toBe("No operators match the filter.");
  });
});
