import { describe, expect, it } from "vitest";
import { attachmentName } from "./perfetto";

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

describe("attachmentName with RFC 5987 filename*", () => {
  it("prefers the UTF-8 name over the ASCII fallback", () => {
    const header =
      "attachment; filename=\"__-_.pt.trace.json\"; filename*=UTF-8''%E5%B7%A5%E4%BD%9C-%F0%9F%98%80.pt.trace.json";
    expect(attachmentName(header)).toBe("工作-😀.pt.trace.json");
  });
  it("falls back to the quoted name when filename* is malformed", () => {
    expect(attachmentName("attachment; filename=\"a.json\"; filename*=UTF-8''%E5%ZZ")).toBe("a.json");
  });
});
