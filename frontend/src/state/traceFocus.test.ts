import { describe, expect, it } from "vitest";
import { focusFor } from "./traceFocus";

const A = { run: "resnet50", worker: "worker0", span: "1" };
const focus = { row: 1234, nonce: 1 };

describe("show in trace belongs to its file", () => {
  it("hands the focus to the Trace view of the file it was made in", () => {
    expect(focusFor({ focus, at: A }, { ...A })).toBe(focus);
  });

  it("hands nothing to another run, worker or span", () => {
    expect(focusFor({ focus, at: A }, { ...A, run: "bert" })).toBeNull();
    expect(focusFor({ focus, at: A }, { ...A, worker: "worker1" })).toBeNull();
    expect(focusFor({ focus, at: A }, { ...A, span: "2" })).toBeNull();
    expect(focusFor({ focus, at: A }, null)).toBeNull();
    expect(focusFor(null, A)).toBeNull();
  });
});
