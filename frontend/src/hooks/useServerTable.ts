// The state of a server-sorted, server-paged table: the sort the user picked (none until a header is
// clicked: the server's default applies) and the offset of the page shown.
import { useCallback, useState } from "react";
import type { SortOrder } from "../api/types";
import type { TablePage } from "../components/PagedTable";
import { toggled } from "../util/sets";

/** The paging fields of a server's table answer. */
export interface ServerPage<Row> {
  rows: Row[];
  total_rows: number;
  offset?: number;
  sort?: string;
  order?: SortOrder;
}

export interface ServerTable {
  offset: number;
  setOffset: (offset: number) => void;
  /** The sort and order to ask the server for: undefined until the user picks one. */
  query: { sort: string | undefined; order: SortOrder | undefined };
  /** The sort the table shows: the user's, else the server's answer, else fallback; order desc unless known. */
  shown: (data: { sort?: string; order?: SortOrder } | null, fallback: string) => { sort: string; order: SortOrder };
  /** PagedTable's paging props for one answer; a new sort goes back to the first page. */
  page: <Row>(data: ServerPage<Row>, shown: { sort: string; order: SortOrder }, busy: boolean) => TablePage<Row>;
}

/**
 * limit: rows a page. onPage: called whenever the user changes the page or the sort (e.g. to collapse
 * expanded rows).
 */
export function useServerTable(limit: number, onPage?: () => void): ServerTable {
  const [sort, setSort] = useState<{ key: string; order: SortOrder } | null>(null);
  const [offset, setOffset] = useState(0);
  const shown = useCallback(
    (data: { sort?: string; order?: SortOrder } | null, fallback: string) => ({
      sort: sort?.key ?? data?.sort ?? fallback,
      order: sort?.order ?? data?.order ?? ("desc" as SortOrder),
    }),
    [sort],
  );
  const page = <Row,>(data: ServerPage<Row>, s: { sort: string; order: SortOrder }, busy: boolean): TablePage<Row> => ({
    rows: data.rows,
    totalRows: data.total_rows,
    offset: data.offset ?? offset,
    limit,
    sort: s.sort,
    order: s.order,
    onSort: (key, order) => {
      setSort({ key, order });
      setOffset(0);
      onPage?.();
    },
    onOffset: (o) => {
      setOffset(o);
      onPage?.();
    },
    busy,
  });
  return { offset, setOffset, query: { sort: sort?.key, order: sort?.order }, shown, page };
}

/** The set of expanded row keys, with a toggle for one key and a reset that collapses all. */
export function useExpanded(): { expanded: Set<string>; toggle: (key: string) => void; collapse: () => void } {
  const [expanded, setExpanded] = useState<Set<string>>(new Set());
  const toggle = useCallback((key: string) => setExpanded((prev) => toggled(prev, key)), []);
  const collapse = useCallback(() => setExpanded(new Set()), []);
  return { expanded, toggle, collapse };
}
