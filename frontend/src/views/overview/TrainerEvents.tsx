import type { TrainerEvent } from "../../api/types";
import { useDiffStyles } from "../diff/useDiffStyles";
import { formatDuration } from "../../util/format";
import { Card } from "../../components/Card";
import { InfoTooltip } from "../../components/InfoTooltip";
import { ColumnTable, type TableColumn } from "../../components/ColumnTable";

const HELP =
  "Composer engine events (event/forward, event/backward, event/loss…). They overlap the step breakdown " +
  "above and are not part of it: each row is the event's time inside the steps (not the gaps between them) and its mean per step.";

const COLUMNS: TableColumn<TrainerEvent>[] = [
  { label: "Event", num: false, className: "name", cell: (e) => e.name },
  { label: "Total", cell: (e) => formatDuration(e.total_us) },
  { label: "Mean per step", cell: (e) => formatDuration(e.mean_per_step_us) },
];

/** The "Trainer events" card of the Overview; nothing when the trace has none. */
export function TrainerEvents({ events }: { events: TrainerEvent[] | undefined }) {
  useDiffStyles();
  if (!events || events.length === 0) return null;
  return (
    <Card title={<InfoTooltip label="Trainer events" text={HELP} />} testId="trainer-events">
      <ColumnTable
        scroll={false}
        className="trainer-events-table"
        columns={COLUMNS}
        rows={events}
        rowKey={(e) => e.name}
        rowAttrs={() => ({ "data-testid": "trainer-event-row" })}
      />
    </Card>
  );
}
