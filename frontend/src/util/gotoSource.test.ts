import { describe, expect, it, vi } from "vitest";
import { goToSource } from "./gotoSource";

function fakeWindow(postMessage: (msg: unknown, origin: string) => void): Window {
  return { parent: { parent: { postMessage } }, navigator: {} } as unknown as Window;
}

describe("goToSource", () => {
  it("posts exactly {filename, line} (0-based) with target '*', nothing else of the frame", () => {
    const postMessage = vi.fn();
    const frame = { file: "/src/train.py", line: 42, name: "secret-fn", extra: { token: "x" } };
    expect(goToSource(frame, fakeWindow(postMessage))).toBe("/src/train.py:42");
    expect(postMessage).toHaveBeenCalledTimes(1);
    const [msg, origin] = postMessage.mock.calls[0]!;
    expect(origin).toBe("*");
    expect(msg).toEqual({ filename: "/src/train.py", line: 41 });
    expect(Object.keys(msg as object).sort()).toEqual(["filename", "line"]);
  });
  it("posts nothing for a frame without file or line", () => {
    const postMessage = vi.fn();
    expect(goToSource({ file: "", line: 3 }, fakeWindow(postMessage))).toBeNull();
    expect(goToSource({ file: "a.py", line: null }, fakeWindow(postMessage))).toBeNull();
    expect(postMessage).not.toHaveBeenCalled();
  });
});
