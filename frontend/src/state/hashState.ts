// The selected run/worker/span lives in the iframe's own location.hash ("#run=a&worker=b&span=1"), so a
// reload restores it. Values are URL-encoded by URLSearchParams, so "/", "&", "#", spaces and any
// unicode survive the round trip.
import type { Selection } from "../api/types";

export type PartialSelection = Partial<Selection>;

const KEYS = ["run", "worker", "span"] as const;

/** Reads a hash ("#run=..." or "run=...") into whatever keys it names. Unknown keys are ignored. */
export function parseHash(hash: string): PartialSelection {
  const text = hash.startsWith("#") ? hash.slice(1) : hash;
  const params = new URLSearchParams(text);
  const out: PartialSelection = {};
  for (const key of KEYS) {
    const value = params.get(key);
    if (value !== null) out[key] = value;
  }
  return out;
}

/** Writes a selection as a hash, with the leading "#". Keys always come in the order run, worker, span. */
export function serializeHash(sel: PartialSelection): string {
  const params = new URLSearchParams();
  for (const key of KEYS) {
    const value = sel[key];
    if (value !== undefined) params.set(key, value);
  }
  const text = params.toString();
  return text === "" ? "" : `#${text}`;
}

/**
 * The absolute URL of the current page with a new hash. An absolute URL matters: history.replaceState
 * resolves a relative URL against <base href="plugin/kinetoscope/">, which would change the path.
 */
export function urlWithHash(href: string, hash: string): string {
  const url = new URL(href);
  url.hash = hash;
  return url.href;
}

/**
 * The selection's hash followed by the other keys the current hash carries (e.g. view=operator), so
 * writing the selection does not drop the view and vice versa.
 */
export function mergeHash(sel: PartialSelection, currentHash: string): string {
  const own = serializeHash(sel);
  const current = new URLSearchParams(currentHash.startsWith("#") ? currentHash.slice(1) : currentHash);
  const extra = new URLSearchParams();
  current.forEach((value, key) => {
    if (!(KEYS as readonly string[]).includes(key)) extra.set(key, value);
  });
  const rest = extra.toString();
  if (rest === "") return own;
  return own === "" ? `#${rest}` : `${own}&${rest}`;
}

/** One extra hash key (not run/worker/span), e.g. "view"; null when absent. */
export function readHashParam(hash: string, key: string): string | null {
  return new URLSearchParams(hash.startsWith("#") ? hash.slice(1) : hash).get(key);
}

/** Sets (or with null removes) one extra hash key, keeping the selection and other keys. */
export function writeHashParam(key: string, value: string | null, win: Window = window): void {
  const params = new URLSearchParams(win.location.hash.slice(1));
  if (value === null) params.delete(key);
  else params.set(key, value);
  const text = params.toString();
  const hash = text === "" ? "" : `#${text}`;
  if (win.location.hash === hash) return;
  win.history.replaceState(win.history.state, "", urlWithHash(win.location.href, hash));
}

/** Replaces the current history entry's hash, without a new entry and without a hashchange event. */
export function writeHash(sel: PartialSelection, win: Window = window): void {
  const hash = mergeHash(sel, win.location.hash);
  if (win.location.hash === hash || (hash === "" && win.location.hash === "")) return;
  win.history.replaceState(win.history.state, "", urlWithHash(win.location.href, hash));
}
