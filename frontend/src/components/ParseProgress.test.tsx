import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { SpanInfo } from "../api/types";
import { ParseProgress, queueText } from "./ParseProgress";

const span = (over: Partial<SpanInfo>): SpanInfo => ({
  span: "1", path: "run/w.pt.trace.json.gz", size_bytes: 1, state: "queued", progress: 0, error: null, warnings: [], ...over,
});

describe("ParseProgress", () => {
  it("says how many files are queued before the selected one", () => {
    expect(queueText(0)).toBe("it is next");
    expect(queueText(1)).toBe("1 file is queued before it");
    expect(queueText(7)).toBe("7 files are queued before it");
    expect(queueText(null)).toBeNull();
    render(<ParseProgress span={span({ queued_before: 7 })} />);
    expect(screen.getByTestId("parse-progress-text").textContent).toBe("Waiting to parse run/w.pt.trace.json.gz: 7 files are queued before it");
    expect(screen.getByRole("progressbar").getAttribute("aria-valuenow")).toBe("0");
  });

  it("fills its bar with the loading file's progress", () => {
    render(<ParseProgress span={span({ state: "loading", progress: 0.42 })} />);
    expect(screen.getByTestId("parse-progress-text").textContent).toBe("Parsing run/w.pt.trace.json.gz: 42 %");
    expect(screen.getByRole("progressbar").getAttribute("aria-valuenow")).toBe("42");
  });

  it("an older server without queue positions reads as before", () => {
    render(<ParseProgress span={span({})} />);
    expect(screen.getByTestId("parse-progress-text").textContent).toBe("Waiting to parse run/w.pt.trace.json.gz\u2026");
  });
});
