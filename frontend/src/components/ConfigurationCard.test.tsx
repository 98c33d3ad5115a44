import { describe, expect, it } from "vitest";
import { distributedText } from "./ConfigurationCard";

describe("distributedText", () => {
  it("names backend, rank and world size when the trace gives all three", () => {
    expect(distributedText({ backend: "nccl", rank: 3, world_size: 8 })).toBe("nccl, rank 3 of 8");
  });
  it("never prints null: a distributedInfo with only a rank reads 'rank 0'", () => {
    expect(distributedText({ backend: null, rank: 0, world_size: null })).toBe("rank 0");
    expect(distributedText({ backend: "gloo", rank: 1, world_size: null })).toBe("gloo, rank 1");
  });
  it("falls back to a dash when nothing is known", () => {
    expect(distributedText(null)).toBe("\u2013");
    expect(distributedText({ backend: null, rank: null, world_size: null })).toBe("\u2013");
  });
});
