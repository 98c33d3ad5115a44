// The Distributed/Insights CSS, injected once next to the app's own styles.
import { useInjectedStyles } from "../../hooks/useInjectedStyles";
import css from "./styles.css?inline";

export function useDistributedStyles(): void {
  useInjectedStyles("kinetoscope-distributed-styles", css);
}
