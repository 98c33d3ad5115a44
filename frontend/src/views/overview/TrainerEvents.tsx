import type { TrainerEvent } from "../../api/types";
import { useDiffStyles } from "../diff/useDiffStyles";
import { formatDuration } from "../../util/format";
import { Card } from "../../components/Card";
import { InfoTooltip } from "../../components/InfoTooltip";
import { DataTable, Th } from "../../components/DataTable";

const HELP =
  "Composer engine events (event/forward, event/backward, event/loss…). They overlap the step breakdown " +
  "above and are not part of it: each row is the event's total time in the trace and its mean per step.";

/** The "Trainer events" card of the Overview; nothing when the trace has none. */
export function TrainerEvents({ events }: { events: TrainerEvent[] | undefined }) {
  useDiffStyles();
  if (!events || events.length === 0) return null;
  return (
    <Card title={<InfoTooltip label="Trainer events" text={HELP} />} testId="trainer-events">
      <DataTable
        scroll={false}
        className="trainer-events-table"
        head={
          <>
            <Th label="Event" num={false} />
            <Th label="Total" />
            <Th label="Mean per step" />
          </>
        }
      >
        {events.map((e) => (
          <tr key={e.name} data-testid="trainer-event-row">
            <td className="name">{e.name}</td>
            <td className="num">{formatDuration(e.total_us)}</td>
            <td className="num">{formatDuration(e.mean_per_step_us)}</td>
          </tr>
        ))}
      </DataTable>
    </Card>
  );
}
