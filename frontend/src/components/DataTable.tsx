// A plain (client-side) data table: one header row and the body rows the caller renders, in a
// scrolling box unless told otherwise. Server-paged tables use PagedTable instead.
import type { ReactNode } from "react";
import { InfoTooltip } from "./InfoTooltip";

/** A header cell: right-aligned for numbers (the default), with a definition on hover when `tip` is given. */
export function Th({ label, tip, num = true }: { label: string; tip?: string; num?: boolean }) {
  return <th className={num ? "num" : undefined}>{tip ? <InfoTooltip label={label} text={tip} /> : label}</th>;
}

export function DataTable({
  head,
  children,
  testId,
  className,
  scroll = "table-scroll",
}: {
  /** The header row's cells. */
  head: ReactNode;
  /** The body rows. */
  children: ReactNode;
  testId?: string;
  /** Classes besides "data-table". */
  className?: string;
  /** The class of the scrolling box around the table; false: no box. */
  scroll?: string | false;
}) {
  const table = (
    <table className={className ? `data-table ${className}` : "data-table"} data-testid={testId}>
      <thead>
        <tr>{head}</tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  );
  return scroll === false ? table : <div className={scroll}>{table}</div>;
}
