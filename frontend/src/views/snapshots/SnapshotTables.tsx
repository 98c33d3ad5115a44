// The Snapshots tab's segment map and its largest allocations (with their stacks).
import { useMemo, useState } from "react";
import { snapshotAllocationsUrl, snapshotSegmentsUrl, type ArtifactRef } from "../../api/routes";
import type { SnapshotAllocationRow, SnapshotAllocationsReady, SnapshotBlock, SnapshotSegmentsReady } from "../../api/types";
import { Card } from "../../components/Card";
import { PagedTable, type Column, wholePage } from "../../components/PagedTable";
import { RemoteStatus } from "../../components/RemoteStatus";
import { useRemote } from "../../hooks/useRemote";
import { useExpanded } from "../../hooks/useServerTable";
import { formatBytes, formatNumber } from "../../util/format";
import { formatAddress, layoutSegments } from "../memory/layout";
import { formatSnapshotTime } from "../memory/options";
import { StackFrames } from "./StackFrames";
import { ElidedName } from "../../components/ElidedName";

export function SegmentsCard({ artifact, device }: { artifact: ArtifactRef; device: number }) {
  const state = useRemote<SnapshotSegmentsReady>(snapshotSegmentsUrl(artifact, device));
  const [picked, setPicked] = useState<SnapshotBlock | null>(null);
  const rows = useMemo(() => (state.kind === "ready" ? layoutSegments(state.data.segments) : []), [state]);
  return (
    <Card title="Allocator state (segments and blocks by address)">
      <RemoteStatus state={state} what="allocator segments" />
      {state.kind === "ready" ? (
        <>
          <div className="mem-legend">
            <span>
              <span className="mem-swatch" style={{ background: "#4e79a7" }} />
              active allocated
            </span>
            <span>
              <span className="mem-swatch" style={{ background: "#edc948" }} />
              active pending free
            </span>
            <span>
              <span className="mem-swatch" />
              inactive (cached)
            </span>
            <span>{formatNumber(rows.length)} segments</span>
          </div>
          <div className="mem-seg-list" data-testid="snapshot-segments">
            {rows.map((row) => (
              <div className="mem-seg-row" key={row.segment.address} data-testid="snapshot-segment">
                <span className="mem-seg-label" title={`stream ${row.segment.stream}, ${row.segment.segment_type}`}>
                  {formatAddress(row.segment.address)} {formatBytes(row.segment.total_size)}, {formatBytes(row.activeBytes)} active
                </span>
                <div className="mem-seg-bar" style={{ width: `${row.widthPct}%` }}>
                  {row.blocks.map((b) => (
                    <div
                      key={b.block.address}
                      className={`mem-block ${b.block.state}${picked === b.block ? " mem-block-selected" : ""}`}
                      style={{ left: `${b.leftPct}%`, width: `${b.widthPct}%` }}
                      title={`${b.block.state}: ${formatBytes(b.block.size)} (requested ${formatBytes(b.block.requested_size)}) at ${formatAddress(b.block.address)}`}
                      onClick={() => setPicked((prev) => (prev === b.block ? null : b.block))}
                    />
                  ))}
                </div>
              </div>
            ))}
          </div>
          {picked ? (
            <div className="mem-detail" data-testid="snapshot-block-detail">
              <b>{picked.state}</b> block at {formatAddress(picked.address)}: {formatBytes(picked.size)}, requested{" "}
              {formatBytes(picked.requested_size)}
              <StackFrames artifact={artifact} stack={picked.stack} />
            </div>
          ) : (
            <p className="mem-hint">Hover a block for its size; click it for its frames.</p>
          )}
        </>
      ) : null}
    </Card>
  );
}

export function TopAllocations({ artifact, device, timeUnit }: { artifact: ArtifactRef; device: number; timeUnit: "us" | "entry" }) {
  const state = useRemote<SnapshotAllocationsReady>(snapshotAllocationsUrl(artifact, device, 100));
  const { expanded, toggle } = useExpanded();
  const columns: Column<SnapshotAllocationRow>[] = [
    { key: "bytes", label: "Size", numeric: true, render: (r) => formatBytes(r.bytes) },
    { key: "alloc_time", label: "Allocated", numeric: true, render: (r) => (r.alloc_time === null ? "\u2013" : formatSnapshotTime(r.alloc_time, timeUnit)) },
    { key: "free_time", label: "Freed", numeric: true, render: (r) => (r.free_time === null ? "not freed" : formatSnapshotTime(r.free_time, timeUnit)) },
    { key: "frame", label: "Top frame", className: "name", render: (r) => <ElidedName text={r.frame || "\u2013"} /> },
  ];
  return (
    <Card title="Top allocations">
      <RemoteStatus state={state} what="top allocations" />
      {state.kind === "ready" ? (
        <PagedTable
          testId="snapshot-allocations-table"
          rowTestId="snapshot-allocation-row"
          columns={columns}
          {...wholePage(state.data.rows)}
          rowKey={(_, i) => String(i)}
          expanded={expanded}
          onToggle={toggle}
          renderExpanded={(row) => <StackFrames artifact={artifact} stack={row.stack} />}
        />
      ) : null}
    </Card>
  );
}
