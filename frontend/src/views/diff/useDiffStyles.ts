// The Diff view's and Overview additions' CSS, injected once next to the app's own styles.
import { useInjectedStyles } from "../../hooks/useInjectedStyles";
import css from "./styles.css?inline";

export function useDiffStyles(): void {
  useInjectedStyles("kinetoscope-diff-styles", css);
}
