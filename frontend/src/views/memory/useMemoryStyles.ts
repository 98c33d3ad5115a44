// The memory views' CSS, injected once next to the app's own styles.
import { useInjectedStyles } from "../../hooks/useInjectedStyles";
import css from "./styles.css?inline";

export function useMemoryStyles(): void {
  useInjectedStyles("kinetoscope-memory-styles", css);
}
