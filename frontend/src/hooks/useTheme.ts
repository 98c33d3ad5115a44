// Follows TensorBoard's theme. TensorBoard marks dark mode with the class "dark-mode" on its own body;
// the plugin iframe is same-origin, so it can read (and observe) the parent's body. Outside TensorBoard
// (or if the parent cannot be read), the OS preference decides.
import { useEffect, useState } from "react";

export type Theme = "light" | "dark";

/** The parent document's body, or null when there is no readable parent. */
export function parentBody(win: Window = window): HTMLElement | null {
  try {
    if (!win.parent || win.parent === win) return null;
    return win.parent.document.body ?? null;
  } catch {
    return null; // cross-origin parent
  }
}

function prefersDark(win: Window): boolean {
  try {
    return win.matchMedia?.("(prefers-color-scheme: dark)").matches ?? false;
  } catch {
    return false;
  }
}

export function detectTheme(win: Window = window): Theme {
  const body = parentBody(win);
  if (body) return body.classList.contains("dark-mode") ? "dark" : "light";
  return prefersDark(win) ? "dark" : "light";
}

export function useTheme(win: Window = window): Theme {
  const [theme, setTheme] = useState<Theme>(() => detectTheme(win));

  useEffect(() => {
    const update = () => setTheme(detectTheme(win));
    const cleanups: (() => void)[] = [];
    const body = parentBody(win);
    if (body && typeof MutationObserver !== "undefined") {
      const observer = new MutationObserver(update);
      observer.observe(body, { attributes: true, attributeFilter: ["class"] });
      cleanups.push(() => observer.disconnect());
    }
    const media = win.matchMedia?.("(prefers-color-scheme: dark)");
    if (media?.addEventListener) {
      media.addEventListener("change", update);
      cleanups.push(() => media.removeEventListener("change", update));
    }
    update();
    return () => cleanups.forEach((fn) => fn());
  }, [win]);

  useEffect(() => {
    win.document.documentElement.dataset.theme = theme;
  }, [theme, win]);

  return theme;
}
