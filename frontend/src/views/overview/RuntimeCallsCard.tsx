import type { RuntimeCallRow, RuntimeCalls } from "../../api/types";
import { Card } from "../../components/Card";
import { ColumnTable, type TableColumn } from "../../components/ColumnTable";
import { InfoTooltip } from "../../components/InfoTooltip";
import { formatDuration, formatNumber, formatPct } from "../../util/format";

const HELP =
  "Per CUDA/HIP runtime or driver API: its calls, total time, the share of the steps window it runs in, " +
  "whether its calls block the host until device work finishes (synchronize calls, blocking copies), and " +
  "the operators and Python frames that issued most of its time. A call outside any operator is credited " +
  "to the innermost record_function range that is not a ProfilerStep.";
const SHOWN = 15;

function issuers(list: { name: string }[]): string {
  return list.length ? list.map((x) => x.name).join(", ") : "–";
}

const COLUMNS: TableColumn<RuntimeCallRow>[] = [
  { label: "API", num: false, className: "name", cell: (r) => r.api, cellTestId: "runtime-call-api" },
  { label: "Calls", cell: (r) => formatNumber(r.calls) },
  { label: "Total", cell: (r) => formatDuration(r.total_us) },
  { label: "% of steps", tip: "Its time inside the steps window over that window.", cell: (r) => formatPct(r.window_pct, 1) },
  {
    label: "Blocks",
    num: false,
    tip: "Calls that returned only after device work finished (time in those calls).",
    cell: (r) => (r.blocks ? `yes: ${formatNumber(r.blocking_calls)} (${formatDuration(r.blocking_us)})` : "no"),
  },
  { label: "Issued by", num: false, className: "name", cell: (r) => issuers(r.operators) },
  { label: "Python frame", num: false, className: "name", cell: (r) => issuers(r.frames.slice(0, 1)) },
];

/** The Overview's runtime-calls table (most time first); nothing when the trace has no runtime calls. */
export function RuntimeCallsCard({ calls }: { calls: RuntimeCalls | undefined }) {
  if (!calls || calls.rows.length === 0) return null;
  const rows = calls.rows.slice(0, SHOWN);
  const left = calls.apis - rows.length;
  return (
    <Card title={<InfoTooltip label="Runtime calls" text={HELP} />} testId="runtime-calls">
      <ColumnTable scroll={false} className="runtime-calls-table" columns={COLUMNS} rows={rows} rowKey={(r) => r.api} />
      {left > 0 ? <p className="muted">{formatNumber(left)} more APIs with less time are not shown.</p> : null}
    </Card>
  );
}
