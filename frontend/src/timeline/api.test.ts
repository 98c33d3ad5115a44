import { describe, expect, it } from "vitest";
import { attachmentName } from "./api";

describe("attachmentName", () => {
  it("reads the file name of an attachment header", () => {
    expect(attachmentName('attachment; filename="worker0.1623143089861.pt.trace.json.gz"')).toBe(
      "worker0.1623143089861.pt.trace.json.gz",
    );
  });
  it("is null without a header or a file name", () => {
    expect(attachmentName(null)).toBeNull();
    expect(attachmentName("inline")).toBeNull();
  });
});
