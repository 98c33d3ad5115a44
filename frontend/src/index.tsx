// Entry point. TensorBoard's plugin page does `import("./index.js").then((m) => m.render())`.
// Styles are bundled as a string and injected with a <style> element, so the bundle is one file.
import { createRoot, type Root } from "react-dom/client";
import { App } from "./App";
import { ErrorBoundary } from "./components/ErrorBoundary";
import styles from "./styles.css?inline";

let root: Root | null = null;

function injectStyles(doc: Document): void {
  if (doc.getElementById("kinetoscope-styles")) return;
  const style = doc.createElement("style");
  style.id = "kinetoscope-styles";
  style.textContent = styles;
  doc.head.appendChild(style);
}

/** Mounts the app into document.body. Calling it again re-renders into the same root. */
export function render(): void {
  injectStyles(document);
  let container = document.getElementById("kinetoscope-root");
  if (!container) {
    container = document.createElement("div");
    container.id = "kinetoscope-root";
    document.body.appendChild(container);
  }
  root ??= createRoot(container);
  root.render(
    <ErrorBoundary title="Kinetoscope failed to start">
      <App />
    </ErrorBoundary>,
  );
}
