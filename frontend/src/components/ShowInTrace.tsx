// The "show in trace" column of the Operator and Kernel tables: jumps to the row's longest call.
import type { Column } from "./PagedTable";

export function traceColumn<Row extends { longest_row?: number }>(onShow: (row: number) => void): Column<Row> {
  return {
    key: "trace",
    label: "Trace",
    sortable: false,
    render: (r) =>
      typeof r.longest_row === "number" && r.longest_row >= 0 ? (
        <button
          type="button"
          className="link-button"
          data-testid="show-in-trace"
          title="Show the longest call in the Trace view"
          onClick={() => onShow(r.longest_row!)}
        >
          show in trace
        </button>
      ) : null,
  };
}
