// A sorted and paged table: only the current page's rows are in the DOM. Clicking a sortable header
// asks for that sort (a second click flips the order); the pager asks for offsets. The sort and the
// paging may be the server's (the usual case) or the caller's; without onSort the headers are plain
// labels and without onOffset there is no pager. Rows may be selectable and expandable.
import { Fragment, type ReactNode } from "react";
import type { SortOrder } from "../api/types";
import { formatNumber } from "../util/format";
import { InfoTooltip } from "./InfoTooltip";

export interface Column<Row> {
  key: string;
  label: string;
  /** Definition shown on hover of the header. */
  tooltip?: string;
  numeric?: boolean;
  sortable?: boolean;
  render: (row: Row) => ReactNode;
  className?: string;
}

/** What a page of server-paged rows tells the table (and a PagedTable's paging props). */
export interface TablePage<Row> {
  rows: Row[];
  totalRows: number;
  offset: number;
  limit: number;
  sort?: string;
  order?: SortOrder;
  onSort?: (key: string, order: SortOrder) => void;
  onOffset?: (offset: number) => void;
  busy?: boolean;
}

/** The paging props of rows shown all on one page (no pager: every row is there). */
export function wholePage<Row>(rows: Row[]): TablePage<Row> {
  return { rows, totalRows: rows.length, offset: 0, limit: rows.length };
}

export interface PagedTableProps<Row> extends TablePage<Row> {
  testId: string;
  /** data-testid of each body row; "table-row" unless given. */
  rowTestId?: string;
  columns: Column<Row>[];
  /** A row's stable key; index is the row's position on this page. */
  rowKey: (row: Row, index: number) => string;
  /** When given, rows are clickable and the one with this key is marked selected. */
  selectedKey?: string | null;
  onRowClick?: (row: Row, key: string) => void;
  /** When given, each row has a ▸ toggle in a first column and this renders under an expanded row. */
  expanded?: Set<string>;
  onToggle?: (key: string) => void;
  renderExpanded?: (row: Row) => ReactNode;
  expandTestId?: string;
  /** Text of the single row shown when there are none; "No rows match." unless given. */
  empty?: string;
}

export function Pager({
  totalRows,
  offset,
  limit,
  onOffset,
  shown,
}: {
  shown?: number;
  totalRows: number;
  offset: number;
  limit: number;
  onOffset: (o: number) => void;
}) {
  const first = totalRows === 0 ? 0 : offset + 1;
  const last = Math.min(totalRows, offset + (shown ?? limit));
  return (
    <div className="pager" data-testid="pager">
      <button type="button" disabled={offset <= 0} onClick={() => onOffset(Math.max(0, offset - limit))}>
        ‹ Prev
      </button>
      <span className="pager-text" data-testid="row-count">
        {formatNumber(first)}–{formatNumber(last)} of {formatNumber(totalRows)} rows
      </span>
      <button type="button" disabled={offset + limit >= totalRows} onClick={() => onOffset(offset + limit)}>
        Next ›
      </button>
    </div>
  );
}

function rowClass(open: boolean, selected: boolean, clickable: boolean): string | undefined {
  const parts = [open ? "open" : "", selected ? "mem-selected" : "", clickable ? "mem-clickable" : ""].filter(Boolean);
  return parts.length > 0 ? parts.join(" ") : undefined;
}

export function PagedTable<Row>(props: PagedTableProps<Row>) {
  const { columns, rows, rowKey, sort, order, onSort, onRowClick, expanded, onToggle, renderExpanded } = props;
  const expandable = onToggle !== undefined && renderExpanded !== undefined;
  const span = columns.length + (expandable ? 1 : 0);
  return (
    <div className="table-wrap">
      {props.onOffset ? (
        <Pager shown={rows.length} totalRows={props.totalRows} offset={props.offset} limit={props.limit} onOffset={props.onOffset} />
      ) : null}
      <div className="table-scroll" aria-busy={props.busy ? true : undefined}>
        <table className="data-table" data-testid={props.testId}>
          <thead>
            <tr>
              {expandable ? <th className="col-toggle" aria-label="Expand" /> : null}
              {columns.map((c) => {
                const active = c.key === sort;
                const label = c.tooltip ? <InfoTooltip label={c.label} text={c.tooltip} /> : c.label;
                return (
                  <th
                    key={c.key}
                    className={`${c.numeric ? "num" : ""}${active ? " sorted" : ""}`}
                    aria-sort={active ? (order === "asc" ? "ascending" : "descending") : undefined}
                    data-col={c.key}
                  >
                    {onSort && c.sortable !== false ? (
                      <button
                        type="button"
                        className="sort-button"
                        data-testid={`sort-${c.key}`}
                        onClick={() => onSort(c.key, active && order === "desc" ? "asc" : "desc")}
                      >
                        {label}
                        <span className="sort-mark">{active ? (order === "asc" ? " ▲" : " ▼") : ""}</span>
                      </button>
                    ) : (
                      label
                    )}
                  </th>
                );
              })}
            </tr>
          </thead>
          <tbody>
            {rows.length === 0 ? (
              <tr>
                <td colSpan={span} className="empty">
                  {props.empty ?? "No rows match."}
                </td>
              </tr>
            ) : null}
            {rows.map((row, index) => {
              const key = rowKey(row, index);
              const open = expanded?.has(key) ?? false;
              const selected = onRowClick !== undefined && props.selectedKey === key;
              return (
                <Fragment key={key}>
                  <tr
                    data-testid={props.rowTestId ?? "table-row"}
                    data-key={key}
                    className={rowClass(open, selected, onRowClick !== undefined)}
                    aria-selected={onRowClick ? selected : undefined}
                    onClick={onRowClick ? () => onRowClick(row, key) : undefined}
                  >
                    {expandable ? (
                      <td className="col-toggle">
                        <button
                          type="button"
                          className="toggle"
                          data-testid={props.expandTestId}
                          aria-expanded={open}
                          aria-label={open ? "Collapse" : "Expand"}
                          onClick={(e) => {
                            // a click on the toggle is not a click on the (selectable) row
                            e.stopPropagation();
                            onToggle?.(key);
                          }}
                        >
                          {open ? "▾" : "▸"}
                        </button>
                      </td>
                    ) : null}
                    {columns.map((c) => (
                      <td key={c.key} className={`${c.numeric ? "num" : ""} ${c.className ?? ""}`} data-col={c.key}>
                        {c.render(row)}
                      </td>
                    ))}
                  </tr>
                  {open && renderExpanded ? (
                    <tr className="expanded-row">
                      <td colSpan={span}>{renderExpanded(row)}</td>
                    </tr>
                  ) : null}
                </Fragment>
              );
            })}
          </tbody>
        </table>
      </div>
    </div>
  );
}
