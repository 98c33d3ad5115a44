// The Diff view's and Overview additions' CSS, injected once next to the app's own styles (the bundle is
// one JS file).
import { useEffect } from "react";
import css from "./styles.css?inline";

export function useDiffStyles(): void {
  useEffect(() => {
    if (document.getElementById("kinetoscope-diff-styles")) return;
    const style = document.createElement("style");
    style.id = "kinetoscope-diff-styles";
    style.textContent = css;
    document.head.appendChild(style);
  }, []);
}
