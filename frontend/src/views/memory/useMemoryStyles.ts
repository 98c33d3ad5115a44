// The memory views' CSS, injected once next to the app's own styles (the bundle is one JS file).
import { useEffect } from "react";
import css from "./styles.css?inline";

export function useMemoryStyles(): void {
  useEffect(() => {
    if (document.getElementById("kinetoscope-memory-styles")) return;
    const style = document.createElement("style");
    style.id = "kinetoscope-memory-styles";
    style.textContent = css;
    document.head.appendChild(style);
  }, []);
}
