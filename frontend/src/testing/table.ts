// Shared helper of the table tests: the text of a rendered table row's cells.
import { within } from "@testing-library/react";

/** The text content of each cell of `row`, in order ("" for an empty cell). */
export function cells(row: HTMLElement): string[] {
  return within(row)
    .getAllByRole("cell")
    .map((c) => c.textContent ?? "");
}
