// The selection as React state, backed by location.hash. What the hash asks for is resolved against the
// registry (falling back to the first run/worker/span), and the hash is rewritten to what is shown.
// With no hash (TensorBoard itself was reloaded), the selection remembered in sessionStorage is used.
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import type { RunsResponse, Selection } from "../api/types";
import { parseHash, serializeHash, writeHash, type PartialSelection } from "../state/hashState";
import { resolveSelection } from "../state/selection";
import { initialSelection, rememberSelection } from "../state/selectionMemory";

export interface HashSelection {
  selection: Selection | null;
  select: (wanted: PartialSelection) => void;
}

export function useHashSelection(data: RunsResponse | null, win: Window = window): HashSelection {
  const [wanted, setWanted] = useState<PartialSelection>(() => initialSelection(win.location.hash));
  /**
   * The selection part of the hash as last written or read (normalized by serializeHash); null before
   * the first write. A hash that differs from it was changed by someone else and not yet read.
   */
  const known = useRef<string | null>(null);

  useEffect(() => {
    // A hash edited by hand selects what it names; an emptied hash keeps the current selection.
    const onHashChange = () => {
      const next = parseHash(win.location.hash);
      if (Object.keys(next).length === 0) return;
      known.current = serializeHash(next);
      setWanted(next);
    };
    win.addEventListener("hashchange", onHashChange);
    return () => win.removeEventListener("hashchange", onHashChange);
  }, [win]);

  const selection = useMemo(
    () => (data ? resolveSelection(data.runs, wanted) : null),
    [data, wanted],
  );

  // Keep the hash in step with what is shown. Only once the registry is known: before that, the hash
  // is left alone so a reload during startup does not lose it. If the hash was changed by hand and its
  // hashchange event has not been handled yet (a registry poll can land in between), leave it: the
  // handler will select what it names, and this runs again.
  useEffect(() => {
    if (!selection) return;
    const inHash = serializeHash(parseHash(win.location.hash));
    if (known.current !== null && inHash !== "" && inHash !== known.current) return;
    known.current = serializeHash(selection);
    writeHash(selection, win);
    rememberSelection(selection);
  }, [selection, win]);

  const select = useCallback((next: PartialSelection) => setWanted(next), []);
  return { selection, select };
}
