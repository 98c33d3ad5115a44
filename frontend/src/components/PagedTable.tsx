// A server-side sorted and paged table: only the current page's rows are in the DOM. Clicking a
// sortable header asks for that sort (a second click flips the order); the pager asks for offsets.
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

interface PagedTableProps<Row> {
  testId: string;
  columns: Column<Row>[];
  rows: Row[];
  rowKey: (row: Row) => string;
  totalRows: number;
  offset: number;
  limit: number;
  sort: string;
  order: SortOrder;
  onSort: (key: string, order: SortOrder) => void;
  onOffset: (offset: number) => void;
  /** When given, each row has a ▸ toggle in a first column and this renders under an expanded row. */
  expanded?: Set<string>;
  onToggle?: (key: string) => void;
  renderExpanded?: (row: Row) => ReactNode;
  expandTestId?: string;
  busy?: boolean;
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

export function PagedTable<Row>(props: PagedTableProps<Row>) {
  const { columns, rows, rowKey, sort, order, onSort, expanded, onToggle, renderExpanded } = props;
  const expandable = onToggle !== undefined && renderExpanded !== undefined;
  const span = columns.length + (expandable ? 1 : 0);
  return (
    <div className="table-wrap">
      <Pager shown={rows.length} totalRows={props.totalRows} offset={props.offset} limit={props.limit} onOffset={props.onOffset} />
      <div className="table-scroll" aria-busy={props.busy ? true : undefined}>
        <table className="data-table" data-testid={props.testId}>
          <thead>
            <tr>
              {expandable ? <th className="col-toggle" aria-label="Expand" /> : null}
              {columns.map((c) => {
                const active = c.key === sort;
                const sortable = c.sortable !== false;
                return (
                  <th
                    key={c.key}
                    className={`${c.numeric ? "num" : ""}${active ? " sorted" : ""}`}
                    aria-sort={active ? (order === "asc" ? "ascending" : "descending") : undefined}
                    data-col={c.key}
                  >
                    {sortable ? (
                      <button
                        type="button"
                        className="sort-button"
                        data-testid={`sort-${c.key}`}
                        onClick={() => onSort(c.key, active && order === "desc" ? "asc" : "desc")}
                      >
                        {c.tooltip ? <InfoTooltip label={c.label} text={c.tooltip} /> : c.label}
                        <span className="sort-mark">{active ? (order === "asc" ? " ▲" : " ▼") : ""}</span>
                      </button>
                    ) : c.tooltip ? (
                      <InfoTooltip label={c.label} text={c.tooltip} />
                    ) : (
                      c.label
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
                  No rows match.
                </td>
              </tr>
            ) : null}
            {rows.map((row) => {
              const key = rowKey(row);
              const open = expanded?.has(key) ?? false;
              return (
                <Fragment key={key}>
                  <tr data-testid="table-row" data-key={key} className={open ? "open" : undefined}>
                    {expandable ? (
                      <td className="col-toggle">
                        <button
                          type="button"
                          className="toggle"
                          data-testid={props.expandTestId}
                          aria-expanded={open}
                          aria-label={open ? "Collapse" : "Expand"}
                          onClick={() => onToggle?.(key)}
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
