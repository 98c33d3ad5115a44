// A card holding the server-paged table of a table view (Operator, GPU Kernel): rows keyed by their
// `key`, and an empty text that names what is listed and the filters that can hide every row.
import { emptyTableText } from "../util/emptyTable";
import { Card } from "./Card";
import { PagedTable, type PagedTableProps } from "./PagedTable";

type TableCardProps<Row> = Omit<PagedTableProps<Row>, "rowKey" | "empty"> & {
  title: string;
  /** What the rows are ("operators"), for the text shown when none is there. */
  what: string;
  filters: readonly (string | null | undefined)[];
};

export function TableCard<Row extends { key: string }>({ title, what, filters, ...table }: TableCardProps<Row>) {
  return (
    <Card title={title}>
      <PagedTable rowKey={(r) => r.key} empty={emptyTableText(what, filters)} {...table} />
    </Card>
  );
}
