// A table's search box: the text as typed, and the trimmed text once typing has paused (what the
// server is asked for).
import { useState } from "react";
import { useDebounced } from "./useDebounced";

export interface SearchBox {
  /** The text, trimmed, once it has not changed for 250 ms. */
  search: string;
  /** A TextField's value and onChange. */
  field: { value: string; onChange: (text: string) => void };
}

/** onEdit: runs on every change of the text (e.g. back to the first page). */
export function useSearchBox(onEdit?: () => void): SearchBox {
  const [text, setText] = useState("");
  const search = useDebounced(text.trim(), 250);
  const onChange = (t: string) => {
    setText(t);
    onEdit?.();
  };
  return { search, field: { value: text, onChange } };
}
