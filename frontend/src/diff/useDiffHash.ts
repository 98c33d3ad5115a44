// The Diff view's own part of the hash: base_run/base_worker/base_span, exp_run/exp_worker/exp_span and
// diff_path. Other keys (the selection, view=diff) are left as they are.
import { useCallback, useEffect, useState } from "react";
import type { DiffSelection } from "../api/diff";
import { urlWithHash } from "../state/hashState";
import { mergeDiffHash, parseDiffHash, type DiffHash } from "./model";

export function writeDiffHash(sel: DiffSelection, path: readonly string[], win: Window = window): void {
  const hash = mergeDiffHash(win.location.hash, sel, path);
  if (win.location.hash === hash) return;
  win.history.replaceState(win.history.state, "", urlWithHash(win.location.href, hash));
}

export function useDiffHash(win: Window = window): [DiffHash, (next: DiffHash) => void] {
  const [wanted, setWanted] = useState<DiffHash>(() => parseDiffHash(win.location.hash));
  useEffect(() => {
    const onHashChange = () => setWanted(parseDiffHash(win.location.hash));
    win.addEventListener("hashchange", onHashChange);
    return () => win.removeEventListener("hashchange", onHashChange);
  }, [win]);
  const set = useCallback((next: DiffHash) => setWanted(next), []);
  return [wanted, set];
}
