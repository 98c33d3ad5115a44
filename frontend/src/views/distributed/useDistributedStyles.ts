// The Distributed/Insights CSS, injected once next to the app's own styles (the bundle is one JS file).
import { useEffect } from "react";
import css from "./styles.css?inline";

export function useDistributedStyles(): void {
  useEffect(() => {
    if (document.getElementById("kinetoscope-distributed-styles")) return;
    const style = document.createElement("style");
    style.id = "kinetoscope-distributed-styles";
    style.textContent = css;
    document.head.appendChild(style);
  }, []);
}
