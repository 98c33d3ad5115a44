// The current view (Overview, Operator, GPU Kernel, Module, Trace) as React state, kept in the hash as
// "view=<id>" next to the selection (absent for the Overview) and in sessionStorage for reloads of
// TensorBoard's own page, which recreate the iframe without a hash.
import { useCallback, useEffect, useState } from "react";
import { readHashParam, writeHashParam } from "../state/hashState";

export const VIEWS = ["overview", "operator", "kernel", "module", "trace", "memory", "snapshots", "distributed", "insights", "diff", "hang"] as const;
export type ViewId = (typeof VIEWS)[number];

const STORAGE_KEY = "kinetoscope.view";

export function parseView(value: string | null | undefined): ViewId {
  return (VIEWS as readonly string[]).includes(value ?? "") ? (value as ViewId) : "overview";
}

function storage(): Storage | null {
  try {
    return typeof sessionStorage === "undefined" ? null : sessionStorage;
  } catch {
    return null;
  }
}

function initialView(win: Window): ViewId {
  const fromHash = readHashParam(win.location.hash, "view");
  if (fromHash !== null) return parseView(fromHash);
  // Only fall back to storage when the hash is empty (TensorBoard reloaded), as the selection does.
  if (win.location.hash.length > 1) return "overview";
  try {
    return parseView(storage()?.getItem(STORAGE_KEY));
  } catch {
    return "overview";
  }
}

export function useView(win: Window = window): [ViewId, (v: ViewId) => void] {
  const [view, setView] = useState<ViewId>(() => initialView(win));

  useEffect(() => {
    const onHashChange = () => {
      const v = readHashParam(win.location.hash, "view");
      if (v !== null || win.location.hash.length > 1) setView(parseView(v));
    };
    win.addEventListener("hashchange", onHashChange);
    return () => win.removeEventListener("hashchange", onHashChange);
  }, [win]);

  useEffect(() => {
    writeHashParam("view", view === "overview" ? null : view, win);
    try {
      storage()?.setItem(STORAGE_KEY, view);
    } catch {
      // storage unavailable: the hash alone still works
    }
  }, [view, win]);

  const select = useCallback((v: ViewId) => setView(v), []);
  return [view, select];
}
