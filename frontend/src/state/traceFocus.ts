// "show in trace" belongs to the file it was asked in: a focus (an event row to zoom to and select)
// is kept with the (run, worker, span) of the table it came from, and any other selection opens the
// Trace view whole, with nothing selected.
import type { Selection } from "../api/types";
import { sameSelection } from "./selection";

export interface PlacedFocus<F> {
  focus: F;
  /** The selection the focus was made in. */
  at: Selection;
}

/** The focus to hand the Trace view of ``selection``: the placed one if it was made there, else null. */
export function focusFor<F>(placed: PlacedFocus<F> | null, selection: Selection | null): F | null {
  return placed && selection && sameSelection(placed.at, selection) ? placed.focus : null;
}
