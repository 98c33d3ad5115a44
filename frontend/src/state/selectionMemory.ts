// A copy of the last selection in sessionStorage. The hash survives a reload of the plugin iframe, but
// TensorBoard recreates the iframe without a hash when its own page reloads; this copy restores the
// selection then. Storage can be unavailable (privacy settings): every access is guarded.
import { parseHash, serializeHash, type PartialSelection } from "./hashState";

export const STORAGE_KEY = "kinetoscope.selection";

export function rememberSelection(sel: PartialSelection, storage: Storage | null = sessionStorageOrNull()): void {
  try {
    storage?.setItem(STORAGE_KEY, serializeHash(sel));
  } catch {
    // quota or access errors: the hash alone still works
  }
}

export function recallSelection(storage: Storage | null = sessionStorageOrNull()): PartialSelection {
  try {
    return parseHash(storage?.getItem(STORAGE_KEY) ?? "");
  } catch {
    return {};
  }
}

/** What to show first: the hash when it names anything, else the remembered selection. */
export function initialSelection(hash: string, storage: Storage | null = sessionStorageOrNull()): PartialSelection {
  const fromHash = parseHash(hash);
  return Object.keys(fromHash).length > 0 ? fromHash : recallSelection(storage);
}

function sessionStorageOrNull(): Storage | null {
  try {
    return typeof sessionStorage === "undefined" ? null : sessionStorage;
  } catch {
    return null;
  }
}
