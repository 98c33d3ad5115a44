// A view's own CSS, injected once into <head> next to the app's styles (the bundle is one JS file).
import { useEffect } from "react";

/** Adds <style id={id}>{css}</style> to the document head on first use; later uses find it there. */
export function useInjectedStyles(id: string, css: string): void {
  useEffect(() => {
    if (document.getElementById(id)) return;
    const style = document.createElement("style");
    style.id = id;
    style.textContent = css;
    document.head.appendChild(style);
  }, [id, css]);
}
