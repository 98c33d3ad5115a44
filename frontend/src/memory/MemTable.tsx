// A sorted (by the server or locally), paged table for the memory views, with stable row hooks,
// row selection and optional expandable rows.
import { Fragment, type ReactNode } from "react";
import type { SortOrder } from "../api/types";
import { Pager, type Column } from "../components/PagedTable";
import { InfoTooltip } from "../components/InfoTooltip";

interface MemTableProps<Row> {
  testId: string;
  rowTestId: string;
  columns: Column<Row>[];
  rows: Row[];
  rowKey: (row: Row, index: number) => string;
  totalRows: number;
  offset: number;
  limit: number;
  sort?: string;
  order?: SortOrder;
  onSort?: (key: string, order: SortOrder) => void;
  onOffset?: (offset: number) => void;
  selectedKey?: string | null;
  onRowClick?: (row: Row, key: string) => void;
  expanded?: Set<string>;
  onToggle?: (key: string) => void;
  renderExpanded?: (row: Row) => ReactNode;
  busy?: boolean;
  empty?: string;
}

export function MemTable<Row>(props: MemTableProps<Row>) {
  const { columns, rows, sort, order, onSort, expanded, onToggle, renderExpanded } = props;
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
              const key = props.rowKey(row, index);
              const open = expanded?.has(key) ?? false;
              const selected = props.selectedKey === key;
              return (
                <Fragment key={key}>
                  <tr
                    data-testid={props.rowTestId}
                    data-key={key}
                    className={`${open ? "open" : ""}${selected ? " mem-selected" : ""}${props.onRowClick ? " mem-clickable" : ""}`}
                    aria-selected={props.onRowClick ? selected : undefined}
                    onClick={props.onRowClick ? () => props.onRowClick?.(row, key) : undefined}
                  >
                    {expandable ? (
                      <td className="col-toggle">
                        <button
                          type="button"
                          className="toggle"
                          aria-expanded={open}
                          aria-label={open ? "Collapse" : "Expand"}
                          onClick={(e) => {
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
