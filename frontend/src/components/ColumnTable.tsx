// A DataTable declared by its columns: per column one header cell (Th) and one body cell per row, so
// a table's heading, tooltip, alignment and cell text are written once, side by side.
import type { ComponentProps, ReactNode } from "react";
import { DataTable, Th } from "./DataTable";

export interface TableColumn<Row> {
  label: string;
  /** A number column (right-aligned header; body cells of class "num" unless `className`); true unless given. */
  num?: boolean;
  /** The header's hover definition. */
  tip?: string;
  /** The body cells' class (default: "num" in a number column, none otherwise). */
  className?: string;
  /** data-testid of the body cells. */
  cellTestId?: string;
  /** A body cell's hover text. */
  title?: (row: Row) => string | undefined;
  cell: (row: Row) => ReactNode;
}

/** The attributes of a body row besides its cells (data-testid, data-*, class, click handler). */
export type RowAttrs = ComponentProps<"tr"> & { [data: `data-${string}`]: string | number | undefined };

export function ColumnTable<Row>({
  columns,
  rows,
  rowKey,
  rowAttrs,
  ...table
}: {
  columns: TableColumn<Row>[];
  rows: Row[];
  rowKey: (row: Row, index: number) => string | number;
  rowAttrs?: (row: Row) => RowAttrs;
  testId?: string;
  className?: string;
  scroll?: string | false;
}) {
  return (
    <DataTable
      {...table}
      head={
        <>
          {columns.map((c) => (
            <Th key={c.label} label={c.label} tip={c.tip} num={c.num} />
          ))}
        </>
      }
    >
      {rows.map((r, i) => (
        <tr key={rowKey(r, i)} {...rowAttrs?.(r)}>
          {columns.map((c) => (
            <td key={c.label} className={c.className ?? (c.num === false ? undefined : "num")} data-testid={c.cellTestId} title={c.title?.(r)}>
              {c.cell(r)}
            </td>
          ))}
        </tr>
      ))}
    </DataTable>
  );
}
