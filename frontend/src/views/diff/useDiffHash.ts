// The Diff view's own part of the hash: base_run/base_worker/base_span, exp_run/exp_worker/exp_span,
// diff_path and diff_for (the main selection a pick was made under). Other keys (the selection,
// view=diff) are left as they are. Only a pick made in the Diff view is written: the defaults follow the
// main selection and are not stored, so they cannot outlive it.
import { useCallback, useEffect, useState } from "react";
import type { DiffSelection } from "../../api/routes";
import type { Selection } from "../../api/types";
import { urlWithHash } from "../../state/hashState";
import { clearDiffHash, mergeDiffHash, parseDiffHash, type DiffHash } from "./model";

function replaceHash(hash: string, win: Window): void {
  if (win.location.hash === hash || (hash === "" && win.location.hash === "")) return;
  win.history.replaceState(win.history.state, "", urlWithHash(win.location.href, hash));
}

export function writeDiffHash(sel: DiffSelection, path: readonly string[], madeFor: Selection, win: Window = window): void {
  replaceHash(mergeDiffHash(win.location.hash, sel, path, madeFor), win);
}

export interface DiffHashState {
  wanted: DiffHash;
  /** A pick in the Diff view (sides, swap or drill-down), made under the main selection `madeFor`. */
  pick: (sel: DiffSelection, path: string[], madeFor: Selection) => void;
  /** Forget the pick: the baseline follows the main selection again. */
  reset: () => void;
}

export function useDiffHash(win: Window = window): DiffHashState {
  const [wanted, setWanted] = useState<DiffHash>(() => parseDiffHash(win.location.hash));
  useEffect(() => {
    const onHashChange = () => setWanted(parseDiffHash(win.location.hash));
    win.addEventListener("hashchange", onHashChange);
    return () => win.removeEventListener("hashchange", onHashChange);
  }, [win]);
  const pick = useCallback(
    (sel: DiffSelection, path: string[], madeFor: Selection) => {
      writeDiffHash(sel, path, madeFor, win);
      setWanted({ base: sel.base, exp: sel.exp, path, for: madeFor });
    },
    [win],
  );
  const reset = useCallback(() => {
    replaceHash(clearDiffHash(win.location.hash), win);
    setWanted({ base: {}, exp: {}, path: [] });
  }, [win]);
  return { wanted, pick, reset };
}
