import { describe, expect, it } from "vitest";
import { detectTheme } from "./useTheme";

function fakeWindow(opts: { parentDark?: boolean; parentThrows?: boolean; prefersDark: boolean }): Window {
  const self: Record<string, unknown> = {
    matchMedia: (q: string) => ({ matches: q.includes("dark") && opts.prefersDark }),
  };
  if (opts.parentThrows) {
    Object.defineProperty(self, "parent", {
      get: () => ({
        get document(): Document {
          throw new DOMException("Blocked a frame", "SecurityError");
        },
      }),
    });
  } else if (opts.parentDark !== undefined) {
    const body = document.createElement("body");
    if (opts.parentDark) body.classList.add("dark-mode");
    self.parent = { document: { body } };
  } else {
    self.parent = self;
  }
  return self as unknown as Window;
}

describe("detectTheme", () => {
  it("follows TensorBoard's dark-mode class on the parent body", () => {
    expect(detectTheme(fakeWindow({ parentDark: true, prefersDark: false }))).toBe("dark");
    expect(detectTheme(fakeWindow({ parentDark: false, prefersDark: true }))).toBe("light");
  });

  it("falls back to prefers-color-scheme without a readable parent", () => {
    expect(detectTheme(fakeWindow({ prefersDark: true }))).toBe("dark");
    expect(detectTheme(fakeWindow({ prefersDark: false }))).toBe("light");
    expect(detectTheme(fakeWindow({ parentThrows: true, prefersDark: true }))).toBe("dark");
  });
});
