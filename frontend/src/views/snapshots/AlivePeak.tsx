// Who holds the memory at a snapshot's peak (route snapshot_attribution): the bytes alive at the peak by
// operator, step and module (with a trace of the same process) or by the allocations' top Python frame.
import { useState } from "react";
import { snapshotAttributionUrl, type ArtifactRef } from "../../api/routes";
import type { AliveRow, SnapshotAttributionReady } from "../../api/types";
import { Card } from "../../components/Card";
import { SelectField } from "../../components/Fields";
import { ElidedName } from "../../components/ElidedName";
import { PagedTable, type Column, wholePage } from "../../components/PagedTable";
import { RemoteStatus } from "../../components/RemoteStatus";
import { useRemote } from "../../hooks/useRemote";
import { useExpanded } from "../../hooks/useServerTable";
import { formatBytes, formatNumber, formatPct } from "../../util/format";
import { StackFrames } from "./StackFrames";

type Grouping = "by_operator" | "by_step" | "by_module" | "by_frame";
const LABEL: Record<Grouping, string> = { by_operator: "Operator", by_step: "Step", by_module: "Module", by_frame: "Top frame" };
const ORDER: Grouping[] = ["by_operator", "by_step", "by_module", "by_frame"];
const MAX_ROWS = 200;

export function AlivePeak({ artifact, device }: { artifact: ArtifactRef; device: number }) {
  const state = useRemote<SnapshotAttributionReady>(snapshotAttributionUrl(artifact, device));
  const [picked, setPicked] = useState<Grouping | null>(null);
  const { expanded, toggle } = useExpanded();
  if (state.kind !== "ready") {
    return (
      <Card title="Alive at the peak">
        <RemoteStatus state={state} what="allocations alive at the peak" />
      </Card>
    );
  }
  const d = state.data;
  const offered = ORDER.filter((g) => d[g] !== null);
  const grouping = picked !== null && offered.includes(picked) ? picked : offered[0]!;
  const rows = (d[grouping] ?? []).slice(0, MAX_ROWS);
  const share = (b: number) => (d.peak_active_bytes > 0 ? formatPct((100 * b) / d.peak_active_bytes, 1) : "\u2013");
  const columns: Column<AliveRow>[] = [
    { key: "name", label: LABEL[grouping], className: "name", render: (r) => <ElidedName text={r.name} /> },
    { key: "bytes", label: "Alive at the peak", numeric: true, render: (r) => formatBytes(r.bytes) },
    { key: "share", label: "Share of peak", tooltip: "bytes / peak active bytes × 100", numeric: true, render: (r) => share(r.bytes) },
    { key: "allocations", label: "Allocations", numeric: true, render: (r) => formatNumber(r.allocations) },
  ];
  return (
    <Card title={`Alive at the peak (${formatBytes(d.peak_active_bytes)}, ${formatNumber(d.allocations)} allocations)`} testId="snapshot-alive">
      <div className="mem-controls">
        <SelectField
          label="Group by"
          testId="snapshot-alive-grouping"
          value={grouping}
          options={offered.map((g) => ({ value: g, label: LABEL[g] }))}
          onChange={(v) => setPicked(v as Grouping)}
        />
        <span className="mem-range" data-testid="snapshot-alive-trace">
          {d.trace
            ? `Operators, steps and modules from trace ${d.trace.path} (worker ${d.trace.worker}, span ${d.trace.span}), matched on the wall clock.`
            : "No trace of this run matches this snapshot (same rank and GPU, overlapping wall-clock time): grouped by the allocations' top frame."}
        </span>
      </div>
      <PagedTable
        testId="snapshot-alive-table"
        rowTestId="snapshot-alive-row"
        columns={columns}
        {...wholePage(rows)}
        rowKey={(r) => r.name}
        expanded={expanded}
        onToggle={toggle}
        onRowClick={(_, key) => toggle(key)}
        expandTestId="snapshot-alive-expand"
        renderExpanded={(row) => <StackFrames artifact={artifact} stack={row.stack} />}
      />
      {(d[grouping] ?? []).length > MAX_ROWS ? <p className="mem-hint">The {MAX_ROWS} largest rows are shown.</p> : null}
    </Card>
  );
}
