import { render } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { ColumnTable, type TableColumn } from "./ColumnTable";
import { DataTable, Th } from "./DataTable";

interface Row {
  name: string;
  us: number;
}

const ROWS: Row[] = [
  { name: "a", us: 1 },
  { name: "b", us: 2 },
];

const COLUMNS: TableColumn<Row>[] = [
  { label: "Name", num: false, className: "cell-code", cellTestId: "row-name", cell: (r) => r.name },
  { label: "Time", tip: "Time in µs", title: (r) => (r.us > 1 ? "long" : undefined), cell: (r) => `${r.us} µs` },
  { label: "Plain", num: false, cell: (r) => r.name.toUpperCase() },
];

describe("ColumnTable", () => {
  it("renders the very markup of the same table written by hand with DataTable and Th", () => {
    const declared = render(
      <ColumnTable
        testId="t"
        className="compact"
        columns={COLUMNS}
        rows={ROWS}
        rowKey={(r) => r.name}
        rowAttrs={(r) => ({ "data-testid": "r", "data-name": r.name })}
      />,
    ).container.innerHTML;
    const byHand = render(
      <DataTable
        testId="t"
        className="compact"
        head={
          <>
            <Th label="Name" num={false} />
            <Th label="Time" tip="Time in µs" />
            <Th label="Plain" num={false} />
          </>
        }
      >
        {ROWS.map((r) => (
          <tr key={r.name} data-testid="r" data-name={r.name}>
            <td className="cell-code" data-testid="row-name">
              {r.name}
            </td>
            <td className="num" title={r.us > 1 ? "long" : undefined}>
              {`${r.us} µs`}
            </td>
            <td>{r.name.toUpperCase()}</td>
          </tr>
        ))}
      </DataTable>,
    ).container.innerHTML;
    const ids = (html: string) => html.replace(/_r_\w+_/g, "_id_"); // each render's useId of the tooltip
    expect(ids(declared)).toBe(ids(byHand));
    expect(declared).toContain('title="long"');
    expect(declared.match(/title=/g)).toHaveLength(1);
    expect(declared).toContain('<div class="table-scroll"><table class="data-table compact" data-testid="t">');
  });
});
